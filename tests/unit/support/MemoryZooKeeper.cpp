// MemoryZooKeeper (contract in MemoryZooKeeper.h). Why one file: the tree, the sessions that own
// its ephemeral nodes and the watches on it change together in every write.
#include "MemoryZooKeeper.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

namespace leasehold::zookeeper::test {
namespace {

std::string parentOf(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string nameOf(const std::string& path) {
  return path.substr(path.rfind('/') + 1);
}

bool validPath(const std::string& path) {
  if (path.empty() || path.front() != '/') return false;
  if (path == "/") return true;
  return path.back() != '/' && path.find("//") == std::string::npos;
}

}  // namespace

// ---- the servers ---------------------------------------------------------------------------

MemoryZooKeeper::MemoryZooKeeper(time::FakeClock& clock) : clock_(clock) {
  nodes_["/"] = Node{};
  expiryTimer_ = clock_.makeTimer([this] { expire(); });
}

MemoryZooKeeper::~MemoryZooKeeper() = default;

int MemoryZooKeeper::count(const std::string& op) const {
  return static_cast<int>(std::count(ops_.begin(), ops_.end(), op));
}

std::int64_t MemoryZooKeeper::newSession(Client* client, time::Duration timeout) {
  const std::int64_t id = nextSession_++;
  sessions_[id] = Session{timeout, clock_.now(), client, client == nullptr};
  return id;
}

std::int64_t MemoryZooKeeper::openSession() {
  return newSession(nullptr, sessionTimeout);
}

bool MemoryZooKeeper::sessionAlive(std::int64_t id) const {
  return sessions_.count(id) != 0;
}

std::string MemoryZooKeeper::create(const std::string& path, const std::string& data,
                                    ZkCreateMode mode, std::int64_t session) {
  std::string created;
  ZkStat stat;
  const ZkCode code = applyCreate(path, data, mode, session, created, stat);
  EXPECT_EQ(code, ZkCode::kOk) << "creating " << path;
  return code == ZkCode::kOk ? created : "";
}

void MemoryZooKeeper::remove(const std::string& path) {
  EXPECT_EQ(applyRemove(path, -1), ZkCode::kOk) << "deleting " << path;
}

std::optional<MemoryZooKeeper::NodeView> MemoryZooKeeper::get(const std::string& path) const {
  const auto it = nodes_.find(path);
  if (it == nodes_.end()) return std::nullopt;
  return NodeView{it->second.data, it->second.stat};
}

std::vector<std::string> MemoryZooKeeper::children(const std::string& path) const {
  const auto it = nodes_.find(path);
  if (it == nodes_.end()) return {};
  return {it->second.children.begin(), it->second.children.end()};
}

ZkCode MemoryZooKeeper::applyCreate(const std::string& path, const std::string& data,
                                    ZkCreateMode mode, std::int64_t session, std::string& created,
                                    ZkStat& stat) {
  if (!validPath(path) || path == "/") {
    ADD_FAILURE() << "create of a malformed path: " << path;
    return ZkCode::kBadArguments;
  }
  if (mode == ZkCreateMode::kContainer) {
    ADD_FAILURE() << "container nodes are not modelled: " << path;
    return ZkCode::kBadArguments;
  }
  const bool ephemeral =
      mode == ZkCreateMode::kEphemeral || mode == ZkCreateMode::kEphemeralSequential;
  if (ephemeral && !sessions_.count(session)) {
    ADD_FAILURE() << "an ephemeral node without a live session: " << path;
    return ZkCode::kSessionExpired;
  }
  const std::string parent = parentOf(path);
  const auto p = nodes_.find(parent);
  if (p == nodes_.end()) return ZkCode::kNoNode;
  if (p->second.stat.ephemeralOwner != 0) return ZkCode::kNoChildrenForEphemerals;
  created = path;
  if (mode == ZkCreateMode::kEphemeralSequential) {
    // ZooKeeper's sequence is the parent's cversion (every child created or deleted counts).
    char sequence[16];
    std::snprintf(sequence, sizeof sequence, "%010d", p->second.cversion);
    created += sequence;
  }
  if (nodes_.count(created)) return ZkCode::kNodeExists;
  ++zxid_;
  Node n;
  n.data = data;
  n.stat.czxid = zxid_;
  n.stat.mzxid = zxid_;
  n.stat.ephemeralOwner = ephemeral ? session : 0;
  stat = n.stat;
  nodes_[created] = std::move(n);
  Node& parentNode = nodes_[parent];
  parentNode.children.insert(nameOf(created));
  ++parentNode.cversion;
  parentNode.stat.numChildren = static_cast<std::int32_t>(parentNode.children.size());
  fire(existsWatches_, created, ZkWatchEvent::Kind::kCreated);
  fire(childWatches_, parent, ZkWatchEvent::Kind::kChildrenChanged);
  return ZkCode::kOk;
}

ZkCode MemoryZooKeeper::applyRemove(const std::string& path, std::int32_t version) {
  if (!validPath(path) || path == "/") {
    ADD_FAILURE() << "delete of a malformed path: " << path;
    return ZkCode::kBadArguments;
  }
  const auto it = nodes_.find(path);
  if (it == nodes_.end()) return ZkCode::kNoNode;
  if (version != -1 && version != it->second.stat.version) return ZkCode::kBadVersion;
  if (!it->second.children.empty()) return ZkCode::kNotEmpty;
  ++zxid_;
  nodes_.erase(it);
  Node& parent = nodes_[parentOf(path)];
  parent.children.erase(nameOf(path));
  ++parent.cversion;
  parent.stat.numChildren = static_cast<std::int32_t>(parent.children.size());
  fire(existsWatches_, path, ZkWatchEvent::Kind::kDeleted);
  fire(childWatches_, path, ZkWatchEvent::Kind::kDeleted);
  fire(childWatches_, parentOf(path), ZkWatchEvent::Kind::kChildrenChanged);
  return ZkCode::kOk;
}

void MemoryZooKeeper::fire(std::map<std::string, std::vector<Watch>>& watches,
                           const std::string& path, ZkWatchEvent::Kind kind) {
  const auto it = watches.find(path);
  if (it == watches.end()) return;
  auto fired = std::move(it->second);
  watches.erase(it);
  for (auto& w : fired) {
    if (w.connection != w.client->connection_) continue;  // lost with its connection already
    ZkWatchEvent e{kind, path};
    w.client->deliver(
        [fn = std::move(w.fn), e](bool lost) {
          ZkWatchEvent event = e;
          if (lost) event.kind = ZkWatchEvent::Kind::kConnectionLost;
          fn(event);
        },
        w.client->latency);
  }
}

void MemoryZooKeeper::killSession(std::int64_t id) {
  const auto it = sessions_.find(id);
  if (it == sessions_.end()) return;
  Client* client = it->second.client;
  sessions_.erase(it);
  // The client hears of it first: the servers closed its connection, so the deletions below
  // fire none of its watches (as on a real ensemble, which delivers nothing to a dead session).
  if (client) client->expired("the servers expired session " + std::to_string(id));
  std::vector<std::string> ephemerals;
  for (const auto& [path, node] : nodes_) {
    if (node.stat.ephemeralOwner == id) ephemerals.push_back(path);
  }
  for (const auto& path : ephemerals)
    applyRemove(path, -1);
}

void MemoryZooKeeper::expireSession(std::int64_t id) {
  EXPECT_TRUE(sessions_.count(id)) << "no session " << id;
  killSession(id);
}

void MemoryZooKeeper::expire() {
  std::vector<std::int64_t> due;
  for (const auto& [id, s] : sessions_) {
    const bool keptAlive = s.testOwned || (s.client && s.client->reachable_);
    if (!keptAlive && s.lastHeard + s.timeout <= clock_.now()) due.push_back(id);
  }
  for (auto id : due)
    killSession(id);
  armExpiry();
}

void MemoryZooKeeper::armExpiry() {
  std::optional<time::MonoTime> next;
  for (const auto& [id, s] : sessions_) {
    const bool keptAlive = s.testOwned || (s.client && s.client->reachable_);
    if (keptAlive) continue;
    const auto at = s.lastHeard + s.timeout;
    if (!next || at < *next) next = at;
  }
  if (next) {
    expiryTimer_->armAt(*next);
  } else {
    expiryTimer_->disarm();
  }
}

void MemoryZooKeeper::forget(Client* client) {
  for (auto* watches : {&existsWatches_, &childWatches_}) {
    for (auto& [path, list] : *watches) {
      std::erase_if(list, [client](const Watch& w) { return w.client == client; });
    }
  }
  for (auto& [id, s] : sessions_) {
    if (s.client != client) continue;
    s.client = nullptr;  // kill -9: the servers hear nothing more of it
    s.lastHeard = clock_.now();
  }
  armExpiry();
}

// ---- one client ----------------------------------------------------------------------------

MemoryZooKeeper::Client::Client(MemoryZooKeeper& zk, std::string server)
    : zk_(zk), server_(std::move(server)) {}

MemoryZooKeeper::Client::~Client() {
  zk_.forget(this);
}

int MemoryZooKeeper::Client::count(const std::string& op) const {
  return static_cast<int>(std::count(ops.begin(), ops.end(), op));
}

int MemoryZooKeeper::Client::liveWatches() const {
  int n = 0;
  for (const auto* watches : {&zk_.existsWatches_, &zk_.childWatches_}) {
    for (const auto& [path, list] : *watches) {
      n += static_cast<int>(std::count_if(list.begin(), list.end(), [this](const Watch& w) {
        return w.client == this && w.connection == connection_;
      }));
    }
  }
  return n;
}

void MemoryZooKeeper::Client::deliver(std::function<void(bool lost)> f, time::Duration after) {
  std::erase_if(pending_, [](const auto& t) { return !t->armed(); });
  const auto at = std::max(zk_.clock_.now() + after, lastDelivery_);
  lastDelivery_ = at;
  std::weak_ptr<char> alive = alive_;
  const auto connection = connection_;
  auto timer = zk_.clock_.makeTimer([this, alive, connection, f = std::move(f)] {
    if (!alive.expired()) f(connection != connection_);
  });
  timer->armAt(at);
  pending_.push_back(std::move(timer));
}

void MemoryZooKeeper::Client::sessionEvent(ZkSessionEvent e) {
  e.server = server_;
  deliver(
      [this, e](bool) {
        if (handler_) handler_(e);
      },
      latency);
}

void MemoryZooKeeper::Client::startSession() {
  const auto timeout = negotiatedTimeout.value_or(zk_.sessionTimeout);
  session_ = zk_.newSession(this, timeout);
  ZkSessionEvent e;
  e.kind = ZkSessionEvent::Kind::kConnected;
  e.sessionId = *session_;
  e.newSession = true;
  e.negotiatedTimeout = timeout;
  sessionEvent(e);
}

void MemoryZooKeeper::Client::open() {
  if (opened_) {
    ADD_FAILURE() << "open() twice";
    return;
  }
  opened_ = true;
  if (reachable_) startSession();
}

void MemoryZooKeeper::Client::close(std::function<void()> done) {
  closed_ = true;
  if (session_ && reachable_) zk_.killSession(*session_);
  session_.reset();
  deliver(
      [done = std::move(done)](bool) {
        if (done) done();
      },
      latency);
}

void MemoryZooKeeper::Client::expired(const std::string& detail) {
  session_.reset();
  if (!reachable_) {
    expiredUnseen_ = true;  // said when it can reach a server again
    return;
  }
  ++connection_;  // the servers close the connection; answers in flight are lost
  ZkSessionEvent e;
  e.kind = ZkSessionEvent::Kind::kExpired;
  e.detail = detail;
  sessionEvent(e);
  if (!closed_) startSession();
}

void MemoryZooKeeper::Client::connectionLost(bool reconnect) {
  ++connection_;
  // Watches set on the old connection fire kConnectionLost.
  for (auto* watches : {&zk_.existsWatches_, &zk_.childWatches_}) {
    for (auto& [path, list] : *watches) {
      std::vector<Watch> lost;
      std::erase_if(list, [&](Watch& w) {
        if (w.client != this) return false;
        lost.push_back(std::move(w));
        return true;
      });
      for (auto& w : lost) {
        ZkWatchEvent e{ZkWatchEvent::Kind::kConnectionLost, path};
        // Delivered on no connection in particular: never turned into anything else.
        std::weak_ptr<char> alive = alive_;
        auto timer = zk_.clock_.makeTimer([alive, fn = std::move(w.fn), e] {
          if (!alive.expired()) fn(e);
        });
        const auto at = std::max(zk_.clock_.now(), lastDelivery_);
        lastDelivery_ = at;
        timer->armAt(at);
        pending_.push_back(std::move(timer));
      }
    }
  }
  ZkSessionEvent e;
  e.kind = ZkSessionEvent::Kind::kDisconnected;
  e.sessionId = session_.value_or(0);
  e.detail = "connection lost";
  sessionEvent(e);
  if (!reconnect) return;
  if (!session_) return startSession();
  ZkSessionEvent back;
  back.kind = ZkSessionEvent::Kind::kConnected;
  back.sessionId = *session_;
  back.newSession = false;
  back.negotiatedTimeout = renegotiate();
  sessionEvent(back);
}

time::Duration MemoryZooKeeper::Client::renegotiate() {
  // The server it reconnects to applies its own bounds to the timeout the client asks for.
  auto& session = zk_.sessions_.at(*session_);
  if (negotiatedTimeout) session.timeout = *negotiatedTimeout;
  return session.timeout;
}

void MemoryZooKeeper::Client::setReachable(bool reachable) {
  if (reachable == reachable_) return;
  reachable_ = reachable;
  if (!reachable) {
    if (session_) zk_.sessions_.at(*session_).lastHeard = zk_.clock_.now();
    zk_.armExpiry();
    if (opened_ && !closed_) connectionLost(false);
    return;
  }
  zk_.armExpiry();
  if (!opened_ || closed_) return;
  if (expiredUnseen_ || !session_) {
    expiredUnseen_ = false;
    ZkSessionEvent e;
    e.kind = ZkSessionEvent::Kind::kExpired;
    e.detail = "the servers expired the session while we were away";
    sessionEvent(e);
    return startSession();
  }
  ZkSessionEvent back;
  back.kind = ZkSessionEvent::Kind::kConnected;
  back.sessionId = *session_;
  back.negotiatedTimeout = renegotiate();
  sessionEvent(back);
}

void MemoryZooKeeper::Client::failNext(const std::string& op, ZkResult result) {
  failNext_.emplace_back(op, std::move(result));
}

void MemoryZooKeeper::Client::loseNextAnswer(const std::string& op, const std::string& pathPart) {
  loseNext_.emplace_back(op, pathPart);
}

void MemoryZooKeeper::Client::dropConnection() {
  connectionLost(reachable_);
}

void MemoryZooKeeper::Client::failAuthentication(const std::string& detail) {
  ++connection_;
  ZkSessionEvent e;
  e.kind = ZkSessionEvent::Kind::kAuthFailed;
  e.detail = detail;
  sessionEvent(e);
}

ZkResult MemoryZooKeeper::Client::result(ZkCode code) const {
  ZkResult r;
  r.code = code;
  r.server = server_;
  r.sentAt = zk_.clock_.now();
  switch (code) {
    case ZkCode::kOk:
      r.kind = ZkResult::Kind::kOk;
      break;
    case ZkCode::kNoAuth:
    case ZkCode::kAuthFailed:
      r.kind = ZkResult::Kind::kDenied;
      break;
    case ZkCode::kSessionExpired:
      r.kind = ZkResult::Kind::kSessionExpired;
      break;
    default:
      r.kind = ZkResult::Kind::kRejected;
      break;
  }
  if (code != ZkCode::kOk) {
    r.message = server_ + " answered error code " + std::to_string(static_cast<int>(code));
  }
  return r;
}

MemoryZooKeeper::Client::Admit MemoryZooKeeper::Client::admit(const std::string& op,
                                                              const std::string& path, ZkResult& r,
                                                              bool& loseAnswer) {
  ops.push_back(op);
  zk_.ops_.push_back(op);
  if (!opened_ || closed_) ADD_FAILURE() << op << " on a client that is not open";
  const auto it = std::find_if(failNext_.begin(), failNext_.end(),
                               [&](const auto& f) { return f.first.empty() || f.first == op; });
  if (it != failNext_.end()) {
    r = it->second;
    r.sentAt = zk_.clock_.now();
    if (r.server.empty()) r.server = server_;
    failNext_.erase(it);
    return r.kind == ZkResult::Kind::kUnavailable ? Admit::kNoAnswer : Admit::kRefuse;
  }
  if (!reachable_ || !session_) {
    r = unanswered();
    return Admit::kNoAnswer;
  }
  const auto lose = std::find_if(loseNext_.begin(), loseNext_.end(), [&](const auto& l) {
    return l.first == op && path.find(l.second) != std::string::npos;
  });
  loseAnswer = lose != loseNext_.end();
  if (loseAnswer) loseNext_.erase(lose);
  zk_.expire();  // a session whose time is up is gone, whether or not the timer ran yet
  if (!session_) {
    r = unanswered();
    return Admit::kNoAnswer;
  }
  zk_.sessions_.at(*session_).lastHeard = zk_.clock_.now();
  return Admit::kApply;
}

ZkResult MemoryZooKeeper::Client::unanswered() const {
  ZkResult r;
  r.kind = ZkResult::Kind::kUnavailable;
  r.code = ZkCode::kConnectionLoss;
  r.server = server_;
  r.sentAt = zk_.clock_.now();
  r.message = "no answer from " + server_ + " within " + time::formatDuration(zk_.requestTimeout);
  return r;
}

void MemoryZooKeeper::Client::respond(Admit admit, bool loseAnswer, ZkResult r,
                                      std::function<void(const ZkResult&)> answer,
                                      std::function<void(const ZkResult&)> failed) {
  ZkResult none = unanswered();
  none.sentAt = r.sentAt;
  switch (admit) {
    case Admit::kNoAnswer:
      return deliver([failed, r](bool) { failed(r); }, zk_.requestTimeout);
    case Admit::kRefuse:
      return deliver([failed, r, none](bool lost) { failed(lost ? none : r); }, latency);
    case Admit::kApply:
      break;
  }
  if (loseAnswer) {
    // Applied, but no answer came: the request times out and the client drops the connection.
    return deliver(
        [this, failed, none](bool) {
          failed(none);
          connectionLost(reachable_);
        },
        zk_.requestTimeout);
  }
  deliver(
      [answer, failed, r, none](bool lost) {
        if (lost) return failed(none);
        answer(r);
      },
      latency);
}

void MemoryZooKeeper::Client::create(const std::string& path, const std::string& data,
                                     ZkCreateMode mode,
                                     std::function<void(ZkResult, std::string, ZkStat)> done) {
  ZkResult r;
  bool lose = false;
  const Admit a = admit("create", path, r, lose);
  std::string created;
  ZkStat stat;
  if (a == Admit::kApply) r = result(zk_.applyCreate(path, data, mode, *session_, created, stat));
  respond(
      a, lose, r, [done, created, stat](const ZkResult& x) { done(x, created, stat); },
      [done](const ZkResult& x) { done(x, "", ZkStat{}); });
}

void MemoryZooKeeper::Client::remove(const std::string& path, std::int32_t version,
                                     std::function<void(ZkResult)> done) {
  ZkResult r;
  bool lose = false;
  const Admit a = admit("delete", path, r, lose);
  if (a == Admit::kApply) r = result(zk_.applyRemove(path, version));
  respond(a, lose, r, done, done);
}

void MemoryZooKeeper::Client::exists(const std::string& path,
                                     std::function<void(const ZkWatchEvent&)> watcher,
                                     std::function<void(ZkResult, std::optional<ZkStat>)> done) {
  ZkResult r;
  bool lose = false;
  const Admit a = admit("exists", path, r, lose);
  std::optional<ZkStat> stat;
  if (a == Admit::kApply) {
    if (!validPath(path)) ADD_FAILURE() << "exists of a malformed path: " << path;
    r = result(ZkCode::kOk);
    if (auto n = zk_.get(path)) stat = n->stat;
    if (watcher) {
      // Left on the path whether or not it exists: fires on a creation too.
      zk_.existsWatches_[path].push_back(Watch{this, connection_, std::move(watcher)});
      existsWatches.push_back(path);
    }
  }
  respond(
      a, lose, r, [done, stat](const ZkResult& x) { done(x, stat); },
      [done](const ZkResult& x) { done(x, std::nullopt); });
}

void MemoryZooKeeper::Client::getData(const std::string& path,
                                      std::function<void(ZkResult, std::string, ZkStat)> done) {
  ZkResult r;
  bool lose = false;
  const Admit a = admit("getData", path, r, lose);
  std::optional<NodeView> node;
  if (a == Admit::kApply) {
    node = zk_.get(path);
    r = result(node ? ZkCode::kOk : ZkCode::kNoNode);
  }
  respond(
      a, lose, r,
      [done, node](const ZkResult& x) {
        done(x, node ? node->data : "", node ? node->stat : ZkStat{});
      },
      [done](const ZkResult& x) { done(x, "", ZkStat{}); });
}

void MemoryZooKeeper::Client::getChildren(
    const std::string& path, std::function<void(const ZkWatchEvent&)> watcher,
    std::function<void(ZkResult, std::vector<std::string>)> done) {
  ZkResult r;
  bool lose = false;
  const Admit a = admit("getChildren", path, r, lose);
  std::vector<std::string> names;
  if (a == Admit::kApply) {
    const auto it = zk_.nodes_.find(path);
    r = result(it == zk_.nodes_.end() ? ZkCode::kNoNode : ZkCode::kOk);
    if (it != zk_.nodes_.end()) {
      // The server's order is a hash set's: not sorted. Here, reversed.
      names.assign(it->second.children.rbegin(), it->second.children.rend());
      if (watcher) {
        zk_.childWatches_[path].push_back(Watch{this, connection_, std::move(watcher)});
        ++childWatches;
      }
    }
  }
  respond(
      a, lose, r, [done, names](const ZkResult& x) { done(x, names); },
      [done](const ZkResult& x) { done(x, {}); });
}

void MemoryZooKeeper::Client::ping(std::function<void(ZkResult)> done) {
  ZkResult r;
  bool lose = false;
  const Admit a = admit("ping", "", r, lose);
  if (a == Admit::kApply) r = result(ZkCode::kOk);
  respond(a, lose, r, done, done);
}

}  // namespace leasehold::zookeeper::test
