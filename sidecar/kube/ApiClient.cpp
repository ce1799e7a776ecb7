#include "kube/ApiClient.h"

#include <charconv>

namespace leasehold::kube {
namespace {

net::TlsOptions tlsFor(const cluster::RestConfig& c, const cluster::ClientCertificate* cert) {
  net::TlsOptions t;
  t.caPem = c.caPem;
  t.insecureSkipVerify = c.insecureSkipTlsVerify;
  t.serverName = c.tlsServerName;
  t.clientCertPem = cert ? cert->certificatePem : c.clientCertificatePem;
  t.clientKeyPem = cert ? cert->keyPem : c.clientKeyPem;
  return t;
}

std::optional<std::chrono::seconds> parseRetryAfter(const net::HttpHeaders& h) {
  const auto v = h.get("Retry-After");
  if (!v) return std::nullopt;
  long long n = 0;
  const auto* end = v->data() + v->size();
  const auto [p, ec] = std::from_chars(v->data(), end, n);
  // client-go only honours integer seconds; an HTTP date is ignored the same way.
  if (ec != std::errc() || p != end || n < 0 || n > 3600) return std::nullopt;
  return std::chrono::seconds(n);
}

// The net stream behind an ApiStream; owning it keeps it open (dropping it cancels). The net
// stream is opened once the credentials are there: at once, unless an exec plugin is running.
class HttpsApiStream final : public ApiStream {
 public:
  void opened(std::shared_ptr<net::HttpsClient::StreamHandle> handle) {
    handle_ = std::move(handle);
  }
  void failedToOpen() { failed_ = true; }
  bool cancelled() const { return cancelled_; }
  void cancel() override {
    cancelled_ = true;
    if (handle_) handle_->cancel();
  }
  bool active() const override { return !cancelled_ && (handle_ ? handle_->active() : !failed_); }

 private:
  std::shared_ptr<net::HttpsClient::StreamHandle> handle_;
  bool cancelled_ = false;
  bool failed_ = false;
};

}  // namespace

ApiClient::ApiClient(boost::asio::io_context& io, cluster::RestConfig config, std::string userAgent,
                     net::HostResolver& resolver)
    : config_(std::move(config)), userAgent_(std::move(userAgent)) {
  net::HttpsClient::Options options;
  options.resolver = &resolver;
  http_ = std::make_unique<net::HttpsClient>(io, config_.server, tlsFor(config_, nullptr), options);
  if (config_.tokenSource) tokenSourceOnLoop_ = config_.tokenSource->attach(io);
}

ApiClient::~ApiClient() = default;

void ApiClient::shutdown() {
  http_->shutdown();
}

net::HttpsClient::Request ApiClient::build(const ApiRequest& r,
                                           std::chrono::milliseconds deadline) {
  net::HttpsClient::Request req;
  req.method = r.method;
  req.target = r.path;
  req.deadline = deadline;
  req.headers.emplace_back("User-Agent", userAgent_);
  req.headers.emplace_back("Accept", "application/json");
  if (!r.body.empty() || r.method == "POST" || r.method == "PUT" || r.method == "PATCH") {
    req.headers.emplace_back("Content-Type", r.contentType);
    req.body = r.body;
  }
  if (config_.tokenSource) {
    cluster::TokenResult t = config_.tokenSource->token();
    if (t.warning && warn_) warn_(*t.warning);
    if (t.clientCertificate && t.clientCertificate != currentCert_) {
      currentCert_ = t.clientCertificate;
      if (auto err = http_->setTls(tlsFor(config_, currentCert_.get())); err && warn_) {
        warn_("client certificate from " + config_.tokenSource->describe() + " rejected: " + *err);
      }
    }
    if (t.token) req.headers.emplace_back("Authorization", "Bearer " + *t.token);
  }
  return req;
}

void ApiClient::call(ApiRequest request, std::function<void(ApiResponse)> done) {
  send(std::move(request), std::move(done), false);
}

void ApiClient::withCredentials(
    std::chrono::milliseconds deadline,
    std::function<void(std::optional<std::string> problem, std::chrono::milliseconds left)> then) {
  if (!config_.tokenSource) return then(std::nullopt, deadline);
  config_.tokenSource->whenUsable(
      deadline, [deadline, then = std::move(then)](const cluster::TokenWait& wait) {
        const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(wait.waited);
        then(wait.problem, std::max(deadline - waited, std::chrono::milliseconds(1)));
      });
}

void ApiClient::send(ApiRequest request, std::function<void(ApiResponse)> done,
                     bool retriedAfter401) {
  std::weak_ptr<char> alive = alive_;
  const auto deadline = request.deadline;
  withCredentials(deadline, [this, alive, request = std::move(request), done = std::move(done),
                             retriedAfter401](std::optional<std::string> problem,
                                              std::chrono::milliseconds left) mutable {
    if (alive.expired()) return;
    if (problem) {
      ApiResponse out;
      out.error = std::move(*problem);
      if (observer_) observer_(request.verb, 0);
      done(std::move(out));
      return;
    }
    auto req = build(request, left);
    http_->request(std::move(req),
                   [this, alive, request = std::move(request), done = std::move(done),
                    retriedAfter401](net::HttpsClient::Result result) mutable {
                     if (alive.expired()) return;
                     ApiResponse out;
                     if (!result.ok()) {
                       out.error = result.error().message;
                     } else {
                       auto& resp = result.response();
                       out.code = resp.status;
                       out.body = std::move(resp.body);
                       out.retryAfter = parseRetryAfter(resp.headers);
                       ApiStatus s;
                       if (decodeStatus(out.body, s)) out.status = std::move(s);
                       if (!out.ok() && !out.status) {
                         // kube-apiserver's 429 is plain text; keep a short, printable excerpt.
                         out.error = out.body.substr(0, 200);
                       }
                     }
                     if (observer_) observer_(request.verb, out.code);
                     if (out.code == 401 && config_.tokenSource) {
                       // The token may have rotated (projected tokens, exec credentials): fetch a
                       // fresh one and try once more.
                       config_.tokenSource->invalidate();
                       if (!retriedAfter401) return send(std::move(request), std::move(done), true);
                     }
                     done(std::move(out));
                   });
  });
}

std::shared_ptr<ApiStream> ApiClient::stream(ApiRequest request, ApiStreamCallbacks cb,
                                             std::chrono::milliseconds idleTimeout) {
  auto out = std::make_shared<HttpsApiStream>();
  std::weak_ptr<HttpsApiStream> weak = out;
  std::weak_ptr<char> alive = alive_;
  const auto deadline = request.deadline;
  withCredentials(
      deadline, [this, alive, weak, request = std::move(request), cb = std::move(cb), idleTimeout](
                    std::optional<std::string> problem, std::chrono::milliseconds left) mutable {
        const auto stream = weak.lock();
        if (alive.expired() || !stream || stream->cancelled()) return;  // given up meanwhile
        if (problem) {
          stream->failedToOpen();
          if (observer_) observer_(request.verb, 0);
          cb.onEnd(std::move(problem));
          return;
        }
        stream->opened(openStream(request, left, std::move(cb), idleTimeout));
      });
  return out;
}

std::shared_ptr<net::HttpsClient::StreamHandle> ApiClient::openStream(
    const ApiRequest& request, std::chrono::milliseconds deadline, ApiStreamCallbacks cb,
    std::chrono::milliseconds idleTimeout) {
  auto req = build(request, deadline);
  struct State {
    int status = 0;
    std::string errorBody;
  };
  auto state = std::make_shared<State>();
  net::HttpsClient::StreamCallbacks callbacks;
  const std::string verb = request.verb;
  std::weak_ptr<char> alive = alive_;
  callbacks.onHeaders = [this, alive, state, verb, cb](int status, const net::HttpHeaders&) {
    state->status = status;
    if (alive.expired()) return;
    if (observer_) observer_(verb, status);
    if (status == 401 && config_.tokenSource) config_.tokenSource->invalidate();
    if (status >= 200 && status < 300 && cb.onOpen) cb.onOpen();
  };
  callbacks.onData = [state, cb](std::string_view bytes) {
    if (state->status >= 200 && state->status < 300) {
      cb.onData(bytes);
    } else {
      state->errorBody.append(bytes.substr(0, 64 * 1024 - state->errorBody.size()));
    }
  };
  callbacks.onEnd = [this, alive, state, cb, verb](std::optional<net::HttpsClient::Error> e) {
    if (alive.expired()) return;
    if (state->status == 0 && observer_) observer_(verb, 0);
    if (state->status != 0 && (state->status < 200 || state->status >= 300)) {
      cb.onStatus(state->status, state->errorBody);
      return;
    }
    cb.onEnd(e ? std::optional<std::string>(e->message) : std::nullopt);
  };
  net::HttpsClient::StreamOptions options;
  options.idleTimeout = idleTimeout;
  return http_->stream(std::move(req), std::move(callbacks), options);
}

}  // namespace leasehold::kube
