// ZkSession (contract in ZkSession.h). Why over 400 lines: the session's state across
// connections (handshake, authentication, expiry, failover with backoff) and the request queues
// with their deadlines, pings and watches act on the same few fields; split, each part would
// need the others' internals. The connection itself is ZkConnection; the wire records ZkCodec.
#include "zookeeper/ZkSession.h"

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <cstdio>
#include <limits>
#include <random>

#include "net/TlsClientContext.h"
#include "zookeeper/ZkCodec.h"
#include "zookeeper/ZkConnection.h"

namespace leasehold::zookeeper {
namespace {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
using std::chrono::milliseconds;

std::string codeName(std::int32_t err) {
  switch (err) {
    case 0:
      return "OK";
    case -1:
      return "SystemError";
    case -4:
      return "ConnectionLoss";
    case -5:
      return "MarshallingError";
    case -6:
      return "Unimplemented";
    case -7:
      return "OperationTimeout";
    case -8:
      return "BadArguments";
    case -13:
      return "NewConfigNoQuorum";
    case -14:
      return "ReconfigInProgress";
    case -101:
      return "NoNode";
    case -102:
      return "NoAuth";
    case -103:
      return "BadVersion";
    case -108:
      return "NoChildrenForEphemerals";
    case -110:
      return "NodeExists";
    case -111:
      return "NotEmpty";
    case -112:
      return "SessionExpired";
    case -114:
      return "InvalidACL";
    case -115:
      return "AuthFailed";
    case -118:
      return "SessionMoved";
    case -122:
      return "NotReadOnly";
    default:
      return "error";
  }
}

const char* opName(ZkOp op) {
  switch (op) {
    case ZkOp::kDelete:
      return "delete";
    case ZkOp::kExists:
      return "exists";
    case ZkOp::kGetData:
      return "getData";
    case ZkOp::kGetChildren:
      return "getChildren";
    case ZkOp::kPing:
      return "ping";
    case ZkOp::kGetChildren2:
      return "getChildren2";
    case ZkOp::kCreate2:
      return "create2";
    case ZkOp::kAuth:
      return "auth";
    case ZkOp::kCloseSession:
      return "closeSession";
  }
  return "request";
}

// What an error answer means to the recipe.
ZkResult::Kind kindOf(std::int32_t err) {
  switch (err) {
    case 0:
      return ZkResult::Kind::kOk;
    case -1:    // SystemError
    case -4:    // ConnectionLoss
    case -7:    // OperationTimeout
    case -13:   // NewConfigNoQuorum
    case -14:   // ReconfigInProgress
    case -122:  // NotReadOnly: a read-only server
      return ZkResult::Kind::kUnavailable;
    case -112:
      return ZkResult::Kind::kSessionExpired;
    case -102:
    case -115:
      return ZkResult::Kind::kDenied;
    default:
      return ZkResult::Kind::kRejected;
  }
}

ZkStat toZkStat(const Stat& s) {
  return ZkStat{s.czxid, s.mzxid, s.version, s.ephemeralOwner, s.numChildren};
}

std::int32_t flagOf(ZkCreateMode mode) {
  switch (mode) {
    case ZkCreateMode::kPersistent:
      return kCreatePersistent;
    case ZkCreateMode::kEphemeral:
      return kCreateEphemeral;
    case ZkCreateMode::kEphemeralSequential:
      return kCreateEphemeralSequential;
    case ZkCreateMode::kContainer:
      return kCreateContainer;
  }
  return kCreatePersistent;
}

std::string formatMs(milliseconds d) {
  return time::formatDuration(d);
}

std::string sessionHex(std::int64_t id) {
  char hex[24];
  std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(id));
  return hex;
}

}  // namespace

const char* toString(ZkResult::Kind kind) {
  switch (kind) {
    case ZkResult::Kind::kOk:
      return "ok";
    case ZkResult::Kind::kUnavailable:
      return "unavailable";
    case ZkResult::Kind::kSessionExpired:
      return "session expired";
    case ZkResult::Kind::kDenied:
      return "denied";
    case ZkResult::Kind::kRejected:
      return "rejected";
  }
  return "?";
}

// One request from the call until its completion was handed to the loop.
struct ZkSession::Pending {
  ZkOp op = ZkOp::kPing;
  std::string body;  // the record after the RequestHeader
  std::string path;  // with the chroot, for messages and watches
  std::int32_t xid = 0;
  time::MonoTime deadline{};
  time::MonoTime sentAt{};
  std::string server;
  // Decodes the answer's body (when result is ok) and schedules the caller's callback;
  // returns what was malformed instead, and then schedules nothing.
  std::function<std::optional<std::string>(ZkResult&, std::string_view body)> complete;
};

ZkSession::ZkSession(asio::io_context& io, time::Clock& clock, Options options)
    : io_(io), clock_(clock), options_(std::move(options)) {
  auto parsed = parseConnectString(options_.connectString);
  if (auto* error = std::get_if<std::string>(&parsed)) {
    configurationError_ = "ZooKeeper " + *error;
    target_.servers.push_back({"(none)", 2181});
  } else {
    target_ = std::move(std::get<ZkConnectString>(parsed));
  }
  if (options_.shuffle && target_.servers.size() > 1) {
    std::shuffle(target_.servers.begin(), target_.servers.end(),
                 std::mt19937(std::random_device{}()));
  }
  if (options_.tls && !configurationError_) {
    auto context = net::TlsClientContext::create(*options_.tls);
    if (auto* error = std::get_if<std::string>(&context)) {
      configurationError_ = "ZooKeeper TLS: " + *error;
    } else {
      tlsContext_ = std::get<std::shared_ptr<ssl::context>>(context);
    }
  }
  backoff_ = options_.initialBackoff;
  std::weak_ptr<char> alive = alive_;
  auto guarded = [this, alive](void (ZkSession::*method)()) {
    return [this, alive, method] {
      if (!alive.expired()) (this->*method)();
    };
  };
  deadlineTimer_ = clock_.makeTimer(guarded(&ZkSession::onDeadline));
  livenessTimer_ = clock_.makeTimer(guarded(&ZkSession::onLiveness));
  connectTimer_ = clock_.makeTimer([this, alive] {
    if (alive.expired() || !connection_) return;
    drop("no session with " + connection_->address().text() + " within " +
         formatMs(options_.connectTimeout));
  });
  backoffTimer_ = clock_.makeTimer(guarded(&ZkSession::connectNext));
}

ZkSession::~ZkSession() {
  alive_.reset();
  if (connection_) connection_->close();
}

std::string ZkSession::currentServer() const {
  if (connection_) return connection_->address().text();
  const std::size_t n = target_.servers.size();
  return target_.servers[(next_ + n - 1) % n].text();
}

void ZkSession::setSessionHandler(std::function<void(const ZkSessionEvent&)> handler) {
  sessionHandler_ = std::move(handler);
}

std::optional<std::int64_t> ZkSession::sessionId() const {
  if (sessionId_ == 0) return std::nullopt;
  return sessionId_;
}

void ZkSession::open() {
  if (configurationError_ || state_ != State::kIdle) return;
  connectNext();
}

void ZkSession::later(std::function<void()> f) {
  std::weak_ptr<char> alive = alive_;
  asio::post(io_, [alive, f = std::move(f)] {
    if (!alive.expired()) f();
  });
}

void ZkSession::emit(ZkSessionEvent event) {
  later([this, event = std::move(event)] {
    if (sessionHandler_) sessionHandler_(event);
  });
}

std::string ZkSession::withChroot(const std::string& path) const {
  if (target_.chroot.empty()) return path;
  return path == "/" ? target_.chroot : target_.chroot + path;
}

std::string ZkSession::withoutChroot(const std::string& path) const {
  const std::string& root = target_.chroot;
  if (root.empty() || !path.starts_with(root)) return path;
  if (path.size() == root.size()) return "/";
  return path[root.size()] == '/' ? path.substr(root.size()) : path;
}

// --- Requests ---

std::shared_ptr<ZkSession::Pending> ZkSession::makePending(ZkOp op, std::string body) {
  auto p = std::make_shared<Pending>();
  p->op = op;
  p->body = std::move(body);
  return p;
}

void ZkSession::create(const std::string& path, const std::string& data, ZkCreateMode mode,
                       std::function<void(ZkResult, std::string, ZkStat)> done) {
  CreateRequest request;
  request.path = withChroot(path);
  request.data = data;
  // Creator-only with credentials: scheme "auth" stands for the identities this connection
  // authenticated with; the server writes the digest in.
  request.acl = {options_.credentials ? Acl{kPermsAll, "auth", ""}
                                      : Acl{kPermsAll, "world", "anyone"}};
  request.flags = flagOf(mode);
  auto p = makePending(ZkOp::kCreate2, encode(request));
  p->path = request.path;
  p->complete = [this, done = std::move(done)](
                    ZkResult& r, std::string_view body) -> std::optional<std::string> {
    std::string created;
    ZkStat stat;
    if (r.ok()) {
      auto decoded = decodeCreateResponse(body);
      if (!decoded.ok()) return decoded.error();
      created = withoutChroot(decoded.value().path);
      stat = toZkStat(decoded.value().stat);
    }
    later([done, r, created = std::move(created), stat] { done(r, created, stat); });
    return std::nullopt;
  };
  submit(std::move(p));
}

void ZkSession::remove(const std::string& path, std::int32_t version,
                       std::function<void(ZkResult)> done) {
  auto p = makePending(ZkOp::kDelete, encode(DeleteRequest{withChroot(path), version}));
  p->path = withChroot(path);
  p->complete = [this, done = std::move(done)](ZkResult& r,
                                               std::string_view) -> std::optional<std::string> {
    later([done, r] { done(r); });
    return std::nullopt;
  };
  submit(std::move(p));
}

void ZkSession::exists(const std::string& path, Watcher watcher,
                       std::function<void(ZkResult, std::optional<ZkStat>)> done) {
  const std::string full = withChroot(path);
  auto p = makePending(ZkOp::kExists, encode(PathWatchRequest{full, watcher != nullptr}));
  p->path = full;
  p->complete = [this, full, watcher = std::move(watcher), done = std::move(done)](
                    ZkResult& r, std::string_view body) -> std::optional<std::string> {
    std::optional<ZkStat> stat;
    if (r.ok()) {
      auto decoded = decodeStat(body);
      if (!decoded.ok()) return decoded.error();
      stat = toZkStat(decoded.value());
    } else if (r.is(ZkCode::kNoNode)) {
      // Not there is an answer, and the watch stays (it fires when the node is created).
      r.kind = ZkResult::Kind::kOk;
      r.code = ZkCode::kOk;
      r.message.clear();
    }
    if (r.ok() && watcher) dataWatches_.emplace(full, watcher);
    later([done, r, stat] { done(r, stat); });
    return std::nullopt;
  };
  submit(std::move(p));
}

void ZkSession::getData(const std::string& path,
                        std::function<void(ZkResult, std::string, ZkStat)> done) {
  const std::string full = withChroot(path);
  auto p = makePending(ZkOp::kGetData, encode(PathWatchRequest{full, false}));
  p->path = full;
  p->complete = [this, done = std::move(done)](
                    ZkResult& r, std::string_view body) -> std::optional<std::string> {
    std::string data;
    ZkStat stat;
    if (r.ok()) {
      auto decoded = decodeGetDataResponse(body);
      if (!decoded.ok()) return decoded.error();
      data = std::move(decoded.value().data);
      stat = toZkStat(decoded.value().stat);
    }
    later([done, r, data = std::move(data), stat] { done(r, data, stat); });
    return std::nullopt;
  };
  submit(std::move(p));
}

void ZkSession::getChildren(const std::string& path, Watcher watcher,
                            std::function<void(ZkResult, std::vector<std::string>)> done) {
  const std::string full = withChroot(path);
  auto p = makePending(ZkOp::kGetChildren2, encode(PathWatchRequest{full, watcher != nullptr}));
  p->path = full;
  p->complete = [this, full, watcher = std::move(watcher), done = std::move(done)](
                    ZkResult& r, std::string_view body) -> std::optional<std::string> {
    std::vector<std::string> children;
    if (r.ok()) {
      auto decoded = decodeGetChildren2Response(body);
      if (!decoded.ok()) return decoded.error();
      children = std::move(decoded.value().children);
      if (watcher) childWatches_.emplace(full, watcher);
    }
    later([done, r, children = std::move(children)] { done(r, children); });
    return std::nullopt;
  };
  submit(std::move(p));
}

void ZkSession::ping(std::function<void(ZkResult)> done) {
  auto p = makePending(ZkOp::kPing, "");
  p->complete = [this, done = std::move(done)](ZkResult& r,
                                               std::string_view) -> std::optional<std::string> {
    if (done) later([done, r] { done(r); });
    return std::nullopt;
  };
  submit(std::move(p));
}

void ZkSession::close(std::function<void()> done) {
  if (state_ != State::kConnected || closing_) {
    // Nothing to tell a server (or it is being told): the session ends here; the servers
    // expire it after its timeout.
    if (!closing_) closed();
    later(std::move(done));
    return;
  }
  closing_ = true;
  auto p = makePending(ZkOp::kCloseSession, "");
  p->complete = [this, done = std::move(done)](ZkResult&,
                                               std::string_view) -> std::optional<std::string> {
    // Answered or not, the session is over for this client.
    closed();
    later(done);
    return std::nullopt;
  };
  p->deadline = clock_.now() + options_.requestTimeout;
  waiting_.push_back(std::move(p));
  sendQueued();
  armDeadline();
}

void ZkSession::closed() {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  if (connection_) drop("the session was closed");
  failWaiting(ZkResult::Kind::kUnavailable, ZkCode::kConnectionLoss, "the session was closed");
  sessionId_ = 0;
  deadlineTimer_->disarm();
  backoffTimer_->disarm();
}

void ZkSession::fail(const std::shared_ptr<Pending>& p, ZkResult::Kind kind, ZkCode code,
                     const std::string& why) {
  ZkResult r;
  r.kind = kind;
  r.code = code;
  r.message = why;
  r.server = p->server.empty() ? currentServer() : p->server;
  r.sentAt = p->sentAt;
  p->complete(r, {});
}

void ZkSession::submit(std::shared_ptr<Pending> p) {
  if (configurationError_) {
    return fail(p, ZkResult::Kind::kRejected, ZkCode::kBadArguments, *configurationError_);
  }
  if (state_ == State::kAuthFailed) {
    return fail(p, ZkResult::Kind::kDenied, ZkCode::kAuthFailed,
                "the ZooKeeper servers refused the credentials");
  }
  if (state_ == State::kClosed || closing_) {
    return fail(p, ZkResult::Kind::kUnavailable, ZkCode::kConnectionLoss, "the session was closed");
  }
  p->deadline = clock_.now() + options_.requestTimeout;
  waiting_.push_back(std::move(p));
  sendQueued();
  armDeadline();
}

void ZkSession::sendQueued() {
  if (state_ != State::kConnected || !connection_) return;
  while (!waiting_.empty()) {
    auto p = std::move(waiting_.front());
    waiting_.pop_front();
    if (p->op == ZkOp::kPing) {
      p->xid = kPingXid;
      pings_.push_back(p);
    } else {
      p->xid = nextXid_;
      nextXid_ = nextXid_ == std::numeric_limits<std::int32_t>::max() ? 1 : nextXid_ + 1;
      sent_.push_back(p);
    }
    p->sentAt = clock_.now();
    p->server = connection_->address().text();
    lastSent_ = p->sentAt;
    connection_->send(requestFrame(p->xid, p->op, p->body));
  }
}

void ZkSession::answer(const std::shared_ptr<Pending>& p, ZkResult r, std::string_view body) {
  if (auto malformed = p->complete(r, body)) {
    const std::string why =
        "malformed answer from " + p->server + " to " + opName(p->op) + ": " + *malformed;
    fail(p, ZkResult::Kind::kUnavailable, ZkCode::kMarshallingError, why);
    drop(why);
  }
}

void ZkSession::failWaiting(ZkResult::Kind kind, ZkCode code, const std::string& why) {
  auto waiting = std::move(waiting_);
  waiting_.clear();
  for (auto& p : waiting)
    fail(p, kind, code, why);
}

// --- Deadlines and liveness ---

void ZkSession::armDeadline() {
  std::optional<time::MonoTime> first;
  for (const auto* queue : {&waiting_, &sent_, &pings_}) {
    if (!queue->empty() && (!first || queue->front()->deadline < *first)) {
      first = queue->front()->deadline;
    }
  }
  if (first) {
    deadlineTimer_->armAt(*first);
  } else {
    deadlineTimer_->disarm();
  }
}

void ZkSession::onDeadline() {
  const auto now = clock_.now();
  const auto overdue = [now](const std::deque<std::shared_ptr<Pending>>& q) {
    return !q.empty() && q.front()->deadline <= now;
  };
  if (connection_ && (overdue(sent_) || overdue(pings_))) {
    drop("no answer from " + connection_->address().text() + " within " +
         formatMs(options_.requestTimeout));
  }
  while (overdue(waiting_)) {
    auto p = std::move(waiting_.front());
    waiting_.pop_front();
    fail(p, ZkResult::Kind::kUnavailable, ZkCode::kConnectionLoss,
         "no ZooKeeper session within " + formatMs(options_.requestTimeout) +
             (lastFailure_.empty() ? "" : " (last: " + lastFailure_ + ")"));
  }
  armDeadline();
}

void ZkSession::armLiveness() {
  if (state_ != State::kConnected) return livenessTimer_->disarm();
  livenessTimer_->armAt(std::min(lastSent_ + negotiated_ / 3, lastReceived_ + negotiated_ * 2 / 3));
}

void ZkSession::onLiveness() {
  if (state_ != State::kConnected || !connection_) return;
  const auto now = clock_.now();
  if (now - lastReceived_ >= negotiated_ * 2 / 3) {
    return drop("nothing from " + connection_->address().text() + " for " +
                formatMs(std::chrono::duration_cast<milliseconds>(now - lastReceived_)));
  }
  if (now - lastSent_ >= negotiated_ / 3) {
    auto p = makePending(ZkOp::kPing, "");
    p->complete = [](ZkResult&, std::string_view) -> std::optional<std::string> {
      return std::nullopt;
    };
    p->deadline = now + options_.requestTimeout;
    waiting_.push_back(std::move(p));
    sendQueued();
    armDeadline();
  }
  armLiveness();
}

// --- Connections ---

void ZkSession::connectNext() {
  if (state_ == State::kClosed || state_ == State::kAuthFailed || configurationError_) return;
  const ZkServerAddress address = target_.servers[next_];
  next_ = (next_ + 1) % target_.servers.size();
  state_ = State::kConnecting;
  awaitingConnectResponse_ = true;
  authenticating_ = false;
  std::weak_ptr<char> alive = alive_;
  ZkConnection::Handlers handlers;
  handlers.frame = [this, alive](std::string_view payload) {
    if (!alive.expired()) onFrame(payload);
  };
  handlers.failed = [this, alive](const std::string& why) {
    if (!alive.expired()) drop(why);
  };
  connection_ = std::make_shared<ZkConnection>(io_, tlsContext_, options_.tls, address,
                                               options_.resolver, std::move(handlers));
  ConnectRequest request;
  request.lastZxidSeen = lastZxid_;
  request.timeOutMs = static_cast<std::int32_t>(options_.sessionTimeout.count());
  request.sessionId = sessionId_;
  request.passwd = sessionId_ != 0 ? sessionPasswd_ : std::string(16, '\0');
  connectTimer_->armAt(clock_.now() + options_.connectTimeout);
  connection_->open(frame(encode(request)));
}

void ZkSession::onFrame(std::string_view payload) {
  lastReceived_ = clock_.now();
  if (awaitingConnectResponse_) return onConnectResponse(payload);
  const std::string server = connection_->address().text();
  auto reply = decodeReply(payload);
  if (!reply.ok()) return drop("malformed answer from " + server + ": " + reply.error());
  const ReplyHeader& header = reply.value().header;
  if (header.xid == kWatchEventXid) return onWatchEvent(reply.value().body);
  if (header.xid == kAuthXid && authenticating_) return onAuthAnswer(header.err);
  std::deque<std::shared_ptr<Pending>>& queue = header.xid == kPingXid ? pings_ : sent_;
  if (queue.empty() || queue.front()->xid != header.xid) {
    return drop("answer out of order from " + server + ": xid " + std::to_string(header.xid) +
                (queue.empty() ? " with nothing outstanding"
                               : ", expected " + std::to_string(queue.front()->xid)));
  }
  auto p = std::move(queue.front());
  queue.pop_front();
  armDeadline();
  // As ZooKeeper's own client: the zxid of answers to requests, not of pings, auth or events.
  if (header.xid != kPingXid && header.zxid > lastZxid_) lastZxid_ = header.zxid;
  ZkResult r;
  r.kind = kindOf(header.err);
  r.code = static_cast<ZkCode>(header.err);
  r.server = server;
  r.sentAt = p->sentAt;
  if (header.err != 0) {
    r.message = server + " answered " + codeName(header.err) + " (" + std::to_string(header.err) +
                ") to " + opName(p->op) + (p->path.empty() ? "" : " " + withoutChroot(p->path));
  }
  answer(p, std::move(r), reply.value().body);
}

void ZkSession::onConnectResponse(std::string_view payload) {
  const std::string server = connection_->address().text();
  auto response = decodeConnectResponse(payload);
  if (!response.ok()) {
    return drop("malformed ConnectResponse from " + server + ": " + response.error());
  }
  awaitingConnectResponse_ = false;
  if (response.value().timeOutMs <= 0) return expired();
  const bool newSession = response.value().sessionId != sessionId_;
  sessionId_ = response.value().sessionId;
  sessionPasswd_ = response.value().passwd;
  negotiated_ = milliseconds(response.value().timeOutMs);
  if (newSession) nextXid_ = 1;
  newSession_ = newSession;
  if (!options_.credentials) return established();
  authenticating_ = true;
  AuthPacket auth{0, "digest", options_.credentials->user + ":" + options_.credentials->password};
  connection_->send(requestFrame(kAuthXid, ZkOp::kAuth, encode(auth)));
}

void ZkSession::onAuthAnswer(std::int32_t err) {
  authenticating_ = false;
  if (err == 0) return established();
  if (err == -115) return authFailed();
  drop(connection_->address().text() + " answered " + codeName(err) + " (" + std::to_string(err) +
       ") to authentication");
}

void ZkSession::established() {
  connectTimer_->disarm();
  state_ = State::kConnected;
  answered_ = true;
  failedInRow_ = 0;
  backoff_ = options_.initialBackoff;
  lastSent_ = lastReceived_ = clock_.now();
  ZkSessionEvent event;
  event.kind = ZkSessionEvent::Kind::kConnected;
  event.sessionId = sessionId_;
  event.newSession = newSession_;
  event.negotiatedTimeout = negotiated_;
  event.server = connection_->address().text();
  emit(std::move(event));
  sendQueued();
  armLiveness();
  armDeadline();
}

void ZkSession::expired() {
  const std::string server = connection_->address().text();
  ZkSessionEvent event;
  event.kind = ZkSessionEvent::Kind::kExpired;
  event.sessionId = sessionId_;
  event.server = server;
  event.detail = server + " says session " + sessionHex(sessionId_) + " expired";
  const std::string why = event.detail;
  emit(std::move(event));
  sessionId_ = 0;
  sessionPasswd_.clear();
  failWaiting(ZkResult::Kind::kSessionExpired, ZkCode::kSessionExpired, why);
  // The server closes this connection; a new session starts on the next server at once.
  drop(why, true);
}

void ZkSession::authFailed() {
  ZkSessionEvent event;
  event.kind = ZkSessionEvent::Kind::kAuthFailed;
  event.sessionId = sessionId_;
  event.server = connection_->address().text();
  event.detail = event.server + " refused the credentials of ZooKeeper user '" +
                 options_.credentials->user + "' (AuthFailed)";
  state_ = State::kAuthFailed;
  emit(event);
  drop(event.detail);
  failWaiting(ZkResult::Kind::kDenied, ZkCode::kAuthFailed, event.detail);
  deadlineTimer_->disarm();
}

void ZkSession::onWatchEvent(std::string_view body) {
  auto decoded = decodeWatcherEvent(body);
  if (!decoded.ok()) {
    return drop("malformed watch event from " + connection_->address().text() + ": " +
                decoded.error());
  }
  const WatcherEvent& e = decoded.value();
  ZkWatchEvent event;
  event.path = withoutChroot(e.path);
  bool data = false;
  bool children = false;
  switch (e.type) {
    case 1:
      event.kind = ZkWatchEvent::Kind::kCreated;
      data = true;
      break;
    case 2:
      event.kind = ZkWatchEvent::Kind::kDeleted;
      data = children = true;
      break;
    case 3:
      event.kind = ZkWatchEvent::Kind::kDataChanged;
      data = true;
      break;
    case 4:
      event.kind = ZkWatchEvent::Kind::kChildrenChanged;
      children = true;
      break;
    default:
      return;  // session states and removed watches: nothing the recipe set
  }
  std::vector<Watcher> fired;
  for (auto* watches : {data ? &dataWatches_ : nullptr, children ? &childWatches_ : nullptr}) {
    if (!watches) continue;
    auto [from, to] = watches->equal_range(e.path);
    for (auto it = from; it != to; ++it)
      fired.push_back(std::move(it->second));
    watches->erase(from, to);
  }
  for (auto& w : fired)
    later([w = std::move(w), event] { w(event); });
}

void ZkSession::drop(const std::string& why, bool serverAnswered) {
  if (!connection_) return;
  const std::string server = connection_->address().text();
  const bool wasConnected = state_ == State::kConnected;
  lastFailure_ = why;
  connection_->close();
  connection_.reset();
  connectTimer_->disarm();
  livenessTimer_->disarm();
  auto sent = std::move(sent_);
  sent_.clear();
  auto pings = std::move(pings_);
  pings_.clear();
  for (auto* queue : {&sent, &pings})
    for (auto& p : *queue)
      fail(p, ZkResult::Kind::kUnavailable, ZkCode::kConnectionLoss, why);
  ZkWatchEvent lost;
  lost.kind = ZkWatchEvent::Kind::kConnectionLost;
  for (auto* watches : {&dataWatches_, &childWatches_}) {
    for (auto& [path, w] : *watches) {
      lost.path = withoutChroot(path);
      later([w = std::move(w), lost] { w(lost); });
    }
    watches->clear();
  }
  if (state_ == State::kClosed || state_ == State::kAuthFailed) return;
  closing_ = false;
  if (wasConnected) {
    ZkSessionEvent event;
    event.kind = ZkSessionEvent::Kind::kDisconnected;
    event.sessionId = sessionId_;
    event.server = server;
    event.detail = why;
    emit(std::move(event));
  }
  armDeadline();
  // Straight to the next server after a good connection (or an answer, as the expiry is),
  // and after each failed try until a whole round of servers failed; then a backoff.
  if (wasConnected || serverAnswered) {
    failedInRow_ = 0;
  } else if (++failedInRow_ >= target_.servers.size()) {
    failedInRow_ = 0;
    state_ = State::kBackoff;
    // A whole round of servers failed: said once per round (the backoff paces it), so that a
    // client that never got a session says why.
    ZkSessionEvent event;
    event.kind = ZkSessionEvent::Kind::kDisconnected;
    event.sessionId = sessionId_;
    event.server = server;
    event.detail = "no server of the connect string answered; the last: " + why;
    emit(std::move(event));
    backoffTimer_->armAt(clock_.now() + backoff_);
    backoff_ = std::min(backoff_ * 2, options_.maxBackoff);
    return;
  }
  state_ = State::kConnecting;
  later([this] { connectNext(); });
}

}  // namespace leasehold::zookeeper
