#include "FakeApiClient.h"

#include <nlohmann/json.hpp>
#include <sstream>

namespace leasehold::testing_support {
namespace {

std::pair<std::string, std::string> splitQuery(const std::string& pathAndQuery) {
  const auto q = pathAndQuery.find('?');
  if (q == std::string::npos) return {pathAndQuery, ""};
  return {pathAndQuery.substr(0, q), pathAndQuery.substr(q + 1)};
}

std::string describeRequest(const kube::ApiRequest& r, bool isStream) {
  std::string out = (isStream ? "stream " : "call ") + r.method + " " + r.path + " (verb " +
                    r.verb + ", " + r.contentType + ")";
  if (!r.body.empty()) out += " body " + r.body;
  return out;
}

template <typename M>
std::string describeMatcher(const M& m) {
  std::ostringstream os;
  m.DescribeTo(&os);
  return os.str();
}

}  // namespace

kube::ApiResponse answer(int code, std::string body,
                         std::optional<std::chrono::seconds> retryAfter) {
  kube::ApiResponse r;
  r.code = code;
  r.body = std::move(body);
  r.retryAfter = retryAfter;
  kube::ApiStatus s;
  if (kube::decodeStatus(r.body, s)) r.status = s;
  if (!r.ok() && !r.status) r.error = r.body.substr(0, 200);
  return r;
}

std::string statusBody(int code, const std::string& reason, const std::string& message) {
  return nlohmann::json{
      {"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", nlohmann::json::object()},
      {"status", "Failure"}, {"message", message}, {"reason", reason},
      {"code", code}}
      .dump();
}

// ---- Call

void FakeApiClient::Call::deliver(kube::ApiResponse r) {
  if (!made()) {
    ADD_FAILURE() << "answering " << name_ << ", which the code has not called yet";
    return;
  }
  if (answered_) {
    ADD_FAILURE() << "answering " << name_ << " twice";
    return;
  }
  answered_ = true;
  auto done = done_;
  done(std::move(r));
}

void FakeApiClient::Call::reply(int code, std::string body,
                                std::optional<std::chrono::seconds> retryAfter) {
  deliver(answer(code, std::move(body), retryAfter));
}

void FakeApiClient::Call::noAnswer(std::string error) {
  kube::ApiResponse r;
  r.error = std::move(error);
  deliver(std::move(r));
}

// ---- Stream

class FakeApiClient::Stream::Handle final : public kube::ApiStream {
 public:
  explicit Handle(std::shared_ptr<Stream> s) : stream_(std::move(s)) {}
  // Dropping the last reference cancels, as with the real client.
  ~Handle() override { cancel(); }
  void cancel() override {
    if (!stream_->ended_) stream_->cancelled_ = true;
  }
  bool active() const override { return stream_->active(); }

 private:
  std::shared_ptr<Stream> stream_;
};

bool FakeApiClient::Stream::usable(const char* what) {
  if (!requested_) {
    ADD_FAILURE() << what << " on " << name_ << ", which the code has not opened";
    return false;
  }
  if (cancelled_) {
    ADD_FAILURE() << what << " on " << name_ << ", which the code cancelled";
    return false;
  }
  if (ended_) {
    ADD_FAILURE() << what << " on " << name_ << ", which has ended";
    return false;
  }
  return true;
}

void FakeApiClient::Stream::open() {
  if (!usable("open()")) return;
  if (opened2xx_) {
    ADD_FAILURE() << "open() twice on " << name_;
    return;
  }
  opened2xx_ = true;
  if (callbacks_.onOpen) callbacks_.onOpen();
}

void FakeApiClient::Stream::send(const std::string& line) {
  data(line + "\n");
}

void FakeApiClient::Stream::data(std::string_view bytes) {
  if (!usable("data")) return;
  if (!opened2xx_) {
    ADD_FAILURE() << "data on " << name_ << " before open()";
    return;
  }
  if (callbacks_.onData) callbacks_.onData(bytes);
}

void FakeApiClient::Stream::end() {
  if (!usable("end()")) return;
  ended_ = true;
  auto onEnd = callbacks_.onEnd;
  if (onEnd) onEnd(std::nullopt);
}

void FakeApiClient::Stream::fail(std::string error) {
  if (!usable("fail()")) return;
  ended_ = true;
  auto onEnd = callbacks_.onEnd;
  if (onEnd) onEnd(std::move(error));
}

void FakeApiClient::Stream::status(int code, std::string body) {
  if (!usable("status()")) return;
  if (opened2xx_) {
    ADD_FAILURE() << "status() on " << name_ << " after open(): the status came with open()";
    return;
  }
  ended_ = true;
  auto onStatus = callbacks_.onStatus;
  if (onStatus) onStatus(code, body);
}

// ---- Expectation

FakeApiClient::Expectation& FakeApiClient::Expectation::query(StringMatcher m) {
  query_ = std::move(m);
  queryText_ = describeMatcher(query_);
  return *this;
}

FakeApiClient::Expectation& FakeApiClient::Expectation::body(StringMatcher m) {
  body_ = std::move(m);
  return *this;
}

FakeApiClient::Expectation& FakeApiClient::Expectation::contentType(StringMatcher m) {
  contentType_ = std::move(m);
  return *this;
}

FakeApiClient::Expectation& FakeApiClient::Expectation::verb(std::string verb) {
  verb_ = std::move(verb);
  return *this;
}

FakeApiClient::Expectation& FakeApiClient::Expectation::respond(
    int code, std::string body, std::optional<std::chrono::seconds> retryAfter) {
  response_ = answer(code, std::move(body), retryAfter);
  return *this;
}

FakeApiClient::Expectation& FakeApiClient::Expectation::noAnswer(std::string error) {
  kube::ApiResponse r;
  r.error = std::move(error);
  response_ = std::move(r);
  return *this;
}

FakeApiClient::Expectation& FakeApiClient::Expectation::after(time::Duration latency) {
  latency_ = latency;
  return *this;
}

std::shared_ptr<FakeApiClient::Call> FakeApiClient::Expectation::hold() {
  held_ = std::make_shared<Call>();
  held_->name_ = describe();
  return held_;
}

std::shared_ptr<FakeApiClient::Stream> FakeApiClient::Expectation::stream() {
  stream_ = std::make_shared<Stream>();
  stream_->name_ = describe();
  return stream_;
}

bool FakeApiClient::Expectation::matches(const kube::ApiRequest& r, bool isStream) const {
  if (met_ || isStream != static_cast<bool>(stream_)) return false;
  const auto [path, query] = splitQuery(r.path);
  return r.method == method_ && path == path_ && query_.Matches(query) && body_.Matches(r.body) &&
         contentType_.Matches(r.contentType) && (!verb_ || *verb_ == r.verb);
}

std::string FakeApiClient::Expectation::describe() const {
  std::string out = (stream_ ? "stream " : "call ") + method_ + " " + path_ + " query " +
                    queryText_ + " body " + describeMatcher(body_);
  if (verb_) out += " verb " + *verb_;
  return out;
}

// ---- FakeApiClient

FakeApiClient::FakeApiClient(time::FakeClock& clock) : clock_(clock) {}

FakeApiClient::~FakeApiClient() {
  verify();
}

FakeApiClient::Expectation& FakeApiClient::expect(std::string method, std::string pathAndQuery) {
  auto e = std::make_unique<Expectation>();
  auto [path, query] = splitQuery(pathAndQuery);
  e->method_ = std::move(method);
  e->path_ = std::move(path);
  e->query(::testing::Eq(query));
  expectations_.push_back(std::move(e));
  return *expectations_.back();
}

FakeApiClient::Expectation* FakeApiClient::match(const kube::ApiRequest& r, bool isStream) {
  for (auto& e : expectations_) {
    if (e->matches(r, isStream)) {
      e->met_ = true;
      return e.get();
    }
  }
  return nullptr;
}

void FakeApiClient::unexpected(const kube::ApiRequest& r, bool isStream) {
  std::string pending;
  for (const auto& e : expectations_) {
    if (!e->met_) pending += "\n  expected: " + e->describe();
  }
  ADD_FAILURE() << "unexpected request (never answered): " << describeRequest(r, isStream)
                << (pending.empty() ? "\n  (no expectation left)" : pending);
}

void FakeApiClient::call(kube::ApiRequest request, std::function<void(kube::ApiResponse)> done) {
  requests_.push_back(request);
  Expectation* e = match(request, false);
  if (!e) return unexpected(request, false);
  if (e->held_) {
    e->held_->request_ = std::move(request);
    e->held_->done_ = std::move(done);
    return;
  }
  if (!e->response_) {
    ADD_FAILURE() << "expectation without an answer (respond, noAnswer or hold): " << e->describe();
    return;
  }
  // On the clock, never from inside call(): the callers rely on it as on the event loop.
  auto timer =
      clock_.makeTimer([response = *e->response_, done = std::move(done)] { done(response); });
  timer->armAt(clock_.now() + e->latency_);
  deliveries_.push_back(std::move(timer));
}

std::shared_ptr<kube::ApiStream> FakeApiClient::stream(kube::ApiRequest request,
                                                       kube::ApiStreamCallbacks callbacks,
                                                       std::chrono::milliseconds idleTimeout) {
  requests_.push_back(request);
  Expectation* e = match(request, true);
  if (!e) {
    unexpected(request, true);
    auto orphan = std::make_shared<Stream>();
    orphan->requested_ = true;
    return std::make_shared<Stream::Handle>(std::move(orphan));
  }
  auto& s = e->stream_;
  s->request_ = std::move(request);
  s->callbacks_ = std::move(callbacks);
  s->idleTimeout_ = idleTimeout;
  s->requested_ = true;
  return std::make_shared<Stream::Handle>(s);
}

std::size_t FakeApiClient::unmet() const {
  std::size_t n = 0;
  for (const auto& e : expectations_)
    n += e->met_ ? 0 : 1;
  return n;
}

void FakeApiClient::verify() {
  for (const auto& e : expectations_) {
    if (!e->met_) ADD_FAILURE() << "expected request never made: " << e->describe();
  }
  expectations_.clear();
}

}  // namespace leasehold::testing_support
