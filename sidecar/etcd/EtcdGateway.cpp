#include "etcd/EtcdGateway.h"

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "net/LineSplitter.h"

namespace leasehold::etcd {
namespace {

// What an error answer's gRPC code means to the store.
EtcdReply::Kind kindOfCode(int code, const std::string& message) {
  switch (code) {
    case 1:                      // Cancelled
    case kCodeDeadlineExceeded:  // the member gave up waiting for its leader
    case 10:                     // Aborted
    case kCodeUnavailable:       // no leader, no quorum, stopping, request timed out
      return EtcdReply::Kind::kUnavailable;
    case kCodePermissionDenied:
    case kCodeUnauthenticated:
      return EtcdReply::Kind::kDenied;
    case kCodeInvalidArgument:
      // A cluster with authentication on answers a call without a token so.
      return message.find("user name is empty") != std::string::npos ? EtcdReply::Kind::kDenied
                                                                     : EtcdReply::Kind::kRejected;
    default:
      return EtcdReply::Kind::kRejected;
  }
}

// An answer (or its absence) as the store sees it. nothingSent: no byte of the request can have
// reached the member (the connection or the TLS handshake failed).
EtcdReply replyFrom(net::HttpsClient::Result& result, const std::string& url, bool& nothingSent) {
  EtcdReply reply;
  reply.endpoint = url;
  nothingSent = false;
  if (!result.ok()) {
    const auto kind = result.error().kind;
    nothingSent = kind == net::HttpsClient::Error::Kind::Connect ||
                  kind == net::HttpsClient::Error::Kind::Tls;
    reply.kind = EtcdReply::Kind::kUnavailable;
    reply.message = "no answer from " + url + ": " + result.error().message;
    return reply;
  }
  auto& response = result.response();
  GatewayError error;
  if (decodeGatewayError(response.body, error)) {
    reply.code = error.code;
    reply.kind = kindOfCode(error.code, error.message);
    reply.message = url + " answered " + std::to_string(response.status) + ": " + error.message +
                    " (code " + std::to_string(error.code) + ")";
    return reply;
  }
  if (response.status >= 200 && response.status < 300) {
    reply.kind = EtcdReply::Kind::kOk;
    reply.body = std::move(response.body);
    return reply;
  }
  // Not the gateway's error form (a proxy in between, a server that is not etcd).
  const int s = response.status;
  reply.kind = s == 502 || s == 503 || s == 504 ? EtcdReply::Kind::kUnavailable
               : s == 401 || s == 403           ? EtcdReply::Kind::kDenied
                                                : EtcdReply::Kind::kRejected;
  std::string excerpt = response.body.substr(0, 200);
  std::replace_if(
      excerpt.begin(), excerpt.end(), [](char c) { return c < 0x20 || c == 0x7f; }, ' ');
  reply.message = url + " answered " + std::to_string(s) + ": " + excerpt;
  return reply;
}

bool answeredUnavailable(const EtcdReply& r) {
  return r.kind == EtcdReply::Kind::kUnavailable;
}

// The HTTP stream behind an EtcdWatch, opened once a token is there (at once, usually).
class GatewayWatch final : public EtcdWatch {
 public:
  explicit GatewayWatch(EtcdWatchCallbacks callbacks) : callbacks_(std::move(callbacks)) {}
  void opened(std::shared_ptr<net::HttpsClient::StreamHandle> handle) {
    handle_ = std::move(handle);
  }
  // Ends it with onEnd(why), once; nothing runs after.
  void end(const std::string& why) {
    if (!active()) return;
    ended_ = true;
    if (handle_) handle_->cancel();
    callbacks_.onEnd(why);
  }
  void deliver(const WatchMessage& message) { callbacks_.onMessage(message); }
  void cancel() override {
    cancelled_ = true;
    if (handle_) handle_->cancel();
  }
  bool active() const override { return !cancelled_ && !ended_; }

  net::LineSplitter lines;
  int status = 0;
  std::string errorBody;  // a non-2xx answer's body, bounded

 private:
  EtcdWatchCallbacks callbacks_;
  std::shared_ptr<net::HttpsClient::StreamHandle> handle_;
  bool cancelled_ = false;
  bool ended_ = false;
};

}  // namespace

const char* toString(EtcdReply::Kind kind) {
  switch (kind) {
    case EtcdReply::Kind::kOk:
      return "ok";
    case EtcdReply::Kind::kUnavailable:
      return "unavailable";
    case EtcdReply::Kind::kDenied:
      return "denied";
    case EtcdReply::Kind::kRejected:
      return "rejected";
  }
  return "?";
}

struct EtcdGateway::Operation {
  EtcdCall call;
  std::function<void(EtcdReply)> done;
  time::MonoTime endsAt;
  std::size_t triesLeft = 0;  // members not tried yet
  bool reauthenticated = false;
};

EtcdGateway::EtcdGateway(boost::asio::io_context& io, const time::Clock& clock, Options options)
    : io_(io), clock_(clock), credentials_(std::move(options.credentials)) {
  net::HttpsClient::Options http;
  http.resolver = options.resolver;
  for (auto& url : options.endpoints) {
    Member m;
    m.http = std::make_unique<net::HttpsClient>(io, url, options.tls, http);
    if (m.http->configurationError() && !configurationError_) {
      configurationError_ = "--etcd-endpoints: " + url + ": " + *m.http->configurationError();
    }
    m.url = std::move(url);
    members_.push_back(std::move(m));
  }
  if (members_.empty()) {
    configurationError_ = "--etcd-endpoints: no endpoint given";
    Member m;
    m.url = "(none)";
    m.http = std::make_unique<net::HttpsClient>(io, "http://invalid.invalid", net::TlsOptions{});
    members_.push_back(std::move(m));
  }
}

EtcdGateway::~EtcdGateway() = default;

void EtcdGateway::shutdown() {
  shutDown_ = true;
  for (auto& m : members_)
    m.http->shutdown();
}

std::chrono::milliseconds EtcdGateway::left(time::MonoTime endsAt) const {
  // Rounded up: a call never ends before its deadline.
  return std::chrono::ceil<std::chrono::milliseconds>(endsAt - clock_.now());
}

net::HttpsClient::Request EtcdGateway::build(const std::string& method, std::string body,
                                             std::chrono::milliseconds deadline) const {
  net::HttpsClient::Request req;
  req.method = "POST";
  req.target = "/v3/" + method;
  req.deadline = deadline;
  req.headers.emplace_back("Content-Type", "application/json");
  req.headers.emplace_back("Accept", "application/json");
  if (token_) req.headers.emplace_back("Authorization", *token_);
  req.body = std::move(body);
  return req;
}

void EtcdGateway::call(EtcdCall call, std::function<void(EtcdReply)> done) {
  auto op = std::make_shared<Operation>();
  op->endsAt = clock_.now() + call.deadline;
  op->triesLeft = members_.size();
  op->call = std::move(call);
  op->done = std::move(done);
  attempt(std::move(op));
}

void EtcdGateway::attempt(std::shared_ptr<Operation> op) {
  if (shutDown_ || configurationError_) {
    EtcdReply r;
    r.kind = EtcdReply::Kind::kRejected;
    r.message = shutDown_ ? "the etcd client is shut down" : *configurationError_;
    r.endpoint = currentEndpoint();
    // Asynchronously, as every completion.
    return boost::asio::post(io_, [op, r = std::move(r)]() mutable { op->done(std::move(r)); });
  }
  std::weak_ptr<char> alive = alive_;
  withToken(left(op->endsAt), [this, alive, op](std::optional<EtcdReply> failure) {
    if (alive.expired()) return;
    if (!failure) return send(op);
    if (failure->kind == EtcdReply::Kind::kUnavailable) return retryOrFinish(op, *failure, true);
    op->done(std::move(*failure));
  });
}

void EtcdGateway::send(std::shared_ptr<Operation> op) {
  const auto remaining = left(op->endsAt);
  const std::size_t member = current_;
  if (remaining.count() <= 0) {
    EtcdReply r;
    r.endpoint = members_[member].url;
    r.message = "no answer within " + std::to_string(op->call.deadline.count()) + "ms";
    return op->done(std::move(r));
  }
  std::weak_ptr<char> alive = alive_;
  members_[member].http->request(
      build(op->call.method, op->call.body, remaining),
      [this, alive, op, member](net::HttpsClient::Result result) {
        if (alive.expired()) return;
        bool nothingSent = false;
        answered_ = answered_ || result.ok();
        EtcdReply reply = replyFrom(result, members_[member].url, nothingSent);
        if (reply.code == kCodeUnauthenticated && credentials_ && !op->reauthenticated) {
          // The token expired or the member forgot it: authenticate again, once.
          token_.reset();
          op->reauthenticated = true;
          return attempt(op);
        }
        if (answeredUnavailable(reply)) {
          failedOver(member);
          return retryOrFinish(op, std::move(reply), nothingSent);
        }
        op->done(std::move(reply));
      });
}

void EtcdGateway::retryOrFinish(std::shared_ptr<Operation> op, EtcdReply reply, bool nothingSent) {
  if (op->triesLeft > 1 && (nothingSent || op->call.idempotent) && left(op->endsAt).count() > 0) {
    --op->triesLeft;
    return attempt(std::move(op));
  }
  op->done(std::move(reply));
}

std::shared_ptr<EtcdWatch> EtcdGateway::watch(std::string createRequest,
                                              EtcdWatchCallbacks callbacks,
                                              std::chrono::milliseconds openDeadline,
                                              std::chrono::milliseconds idleTimeout) {
  auto w = std::make_shared<GatewayWatch>(std::move(callbacks));
  std::weak_ptr<GatewayWatch> weak = w;
  if (shutDown_ || configurationError_) {
    std::string why = shutDown_ ? "the etcd client is shut down" : *configurationError_;
    boost::asio::post(io_, [weak, why = std::move(why)] {
      if (auto w = weak.lock()) w->end(why);
    });
    return w;
  }
  std::weak_ptr<char> alive = alive_;
  withToken(openDeadline, [this, alive, weak, body = std::move(createRequest), openDeadline,
                           idleTimeout](std::optional<EtcdReply> failure) mutable {
    const auto w = weak.lock();
    if (alive.expired() || !w || !w->active()) return;
    if (failure) return w->end(failure->message);
    const std::size_t member = current_;
    net::HttpsClient::StreamCallbacks callbacks;
    callbacks.onHeaders = [weak](int status, const net::HttpHeaders&) {
      if (auto w = weak.lock()) w->status = status;
    };
    callbacks.onData = [this, alive, weak](std::string_view bytes) {
      const auto w = weak.lock();
      if (alive.expired() || !w || !w->active()) return;
      if (w->status < 200 || w->status >= 300) {
        w->errorBody.append(
            bytes.substr(0, 4096 - std::min<std::size_t>(4096, w->errorBody.size())));
        return;
      }
      std::optional<std::string> malformed;
      w->lines.feed(bytes, [&](std::string_view line) {
        if (malformed || !w->active() || line.empty()) return;
        WatchMessage message;
        std::string error;
        if (!decodeWatchMessage(line, message, error)) {
          malformed = "malformed watch message: " + error;
          return;
        }
        if (message.error && message.error->code == kCodeUnauthenticated) token_.reset();
        w->deliver(message);
      });
      if (w->lines.overflowed()) malformed = "a watch message over the line limit";
      if (malformed) w->end(*malformed);
    };
    callbacks.onEnd = [this, alive, weak, member](std::optional<net::HttpsClient::Error> e) {
      const auto w = weak.lock();
      if (alive.expired() || !w || !w->active()) return;
      const std::string& url = members_[member].url;
      if (w->status == 0 || (w->status >= 200 && w->status < 300)) {
        if (e && e->kind != net::HttpsClient::Error::Kind::Cancelled) failedOver(member);
        return w->end("watch on " + url + (e ? " ended: " + e->message : " ended by the server"));
      }
      net::HttpsClient::Result result(net::HttpsClient::Response{w->status, {}, w->errorBody});
      bool nothingSent = false;
      const EtcdReply reply = replyFrom(result, url, nothingSent);
      if (reply.code == kCodeUnauthenticated) token_.reset();
      if (answeredUnavailable(reply)) failedOver(member);
      w->end("watch refused: " + reply.message);
    };
    net::HttpsClient::StreamOptions options;
    options.idleTimeout = idleTimeout;
    w->opened(members_[member].http->stream(build("watch", std::move(body), openDeadline),
                                            std::move(callbacks), options));
  });
  return w;
}

void EtcdGateway::failedOver(std::size_t member) {
  if (current_ == member) current_ = (member + 1) % members_.size();
}

void EtcdGateway::withToken(std::chrono::milliseconds deadline, TokenReady then) {
  if (!credentials_ || token_) {
    // Asynchronously, so that a call never completes inside call().
    return boost::asio::post(io_, [then = std::move(then)] { then(std::nullopt); });
  }
  waitingForToken_.push_back(std::move(then));
  if (authenticating_) return;
  authenticating_ = true;
  const std::size_t member = current_;
  std::weak_ptr<char> alive = alive_;
  members_[member].http->request(
      build("auth/authenticate", encodeAuthenticate(credentials_->user, credentials_->password),
            std::max(deadline, std::chrono::milliseconds(1))),
      [this, alive, member](net::HttpsClient::Result result) {
        if (alive.expired()) return;
        bool nothingSent = false;
        EtcdReply reply = replyFrom(result, members_[member].url, nothingSent);
        if (answeredUnavailable(reply)) failedOver(member);
        authenticated(std::move(reply));
      });
}

void EtcdGateway::authenticated(EtcdReply reply) {
  authenticating_ = false;
  std::optional<EtcdReply> failure;
  if (reply.ok()) {
    std::string token;
    std::string error;
    if (decodeAuthenticate(reply.body, token, error)) {
      token_ = std::move(token);
    } else {
      reply.kind = EtcdReply::Kind::kRejected;
      reply.message = reply.endpoint + ": malformed answer to authenticate: " + error;
      failure = std::move(reply);
    }
  } else {
    if (reply.kind != EtcdReply::Kind::kUnavailable) reply.kind = EtcdReply::Kind::kDenied;
    reply.message = "authenticating as etcd user '" + credentials_->user + "': " + reply.message;
    failure = std::move(reply);
  }
  auto waiting = std::move(waitingForToken_);
  waitingForToken_.clear();
  for (auto& then : waiting)
    then(failure);
}

}  // namespace leasehold::etcd
