#pragma once
// An ApiTransport for unit tests of the API objects (LeaseClient, LeaseWatch, EventRecorder,
// PodLabeler): it answers only the requests a test scripted, like client-go's fake clientset,
// and its catch-all fails the test (ADD_FAILURE) on any other. Expectations left unmet fail the
// test when the fake is destroyed (or at verify()).
//
//   FakeClock clock;
//   FakeApiClient api(clock);
//   api.expect("GET", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l").respond(404, "");
//   api.expect("PUT", path).body(HasSubstr("\"resourceVersion\":\"7\"")).respond(409, status);
//   auto patch = api.expect("PATCH", podPath).hold();       // the test answers: patch->reply(200)
//   auto watch = api.expect("GET", watchPath).stream();     // watch->open(); watch->send(line)
//
// A request matches the first unmet expectation with its method, path and query (exactly as
// given after '?' in expect(), unless query() says otherwise) and every matcher given. Scripted
// answers (respond, noAnswer) arrive on the FakeClock `after` the call (default: at once, i.e.
// at the next clock.runDue() or advance()), never from inside call(), as on the event loop.
// Held calls and streams are answered by the test, from its own stack. A request nobody
// expected is never answered.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "FakeClock.h"
#include "kube/ApiTransport.h"

namespace leasehold::testing_support {

using StringMatcher = ::testing::Matcher<const std::string&>;

// The ApiResponse the real ApiClient makes of an answer: Status bodies decoded, a short
// excerpt of anything else as the error.
kube::ApiResponse answer(int code, std::string body,
                         std::optional<std::chrono::seconds> retryAfter = std::nullopt);
// A metav1.Status body, as the API server sends with errors and watch ERROR events.
std::string statusBody(int code, const std::string& reason, const std::string& message);

class FakeApiClient final : public kube::ApiTransport {
 public:
  // A unary call the test answers itself (Expectation::hold()).
  class Call {
   public:
    bool made() const { return static_cast<bool>(done_); }
    bool answered() const { return answered_; }
    const kube::ApiRequest& request() const { return request_; }
    void reply(int code, std::string body = "",
               std::optional<std::chrono::seconds> retryAfter = std::nullopt);
    void noAnswer(std::string error);

   private:
    friend class FakeApiClient;
    void deliver(kube::ApiResponse r);
    std::string name_;
    kube::ApiRequest request_;
    std::function<void(kube::ApiResponse)> done_;
    bool answered_ = false;
  };

  // A stream the test drives (Expectation::stream()). The code under test owns its end through
  // the ApiStream it got; cancelled() tells whether it let go.
  class Stream {
   public:
    bool opened() const { return requested_; }
    bool cancelled() const { return cancelled_; }
    bool active() const { return requested_ && !cancelled_ && !ended_; }
    const kube::ApiRequest& request() const { return request_; }
    std::chrono::milliseconds idleTimeout() const { return idleTimeout_; }

    void open();                              // 2xx headers
    void send(const std::string& line);       // one line of the body, newline added
    void data(std::string_view bytes);        // raw body bytes
    void end();                               // a clean end (the server's timeoutSeconds)
    void fail(std::string error);             // broken after a 2xx (reset, idle timeout)
    void status(int code, std::string body);  // a non-2xx answer, which ends it

   private:
    friend class FakeApiClient;
    class Handle;
    bool usable(const char* what);
    std::string name_;
    kube::ApiRequest request_;
    kube::ApiStreamCallbacks callbacks_;
    std::chrono::milliseconds idleTimeout_{0};
    bool requested_ = false;
    bool opened2xx_ = false;
    bool cancelled_ = false;
    bool ended_ = false;
  };

  class Expectation {
   public:
    // The query string (after '?'); replaces the exact match expect() implies.
    Expectation& query(StringMatcher m);
    Expectation& body(StringMatcher m);
    Expectation& contentType(StringMatcher m);
    Expectation& verb(std::string verb);
    // Scripted answers, delivered on the clock `latency` after the call.
    Expectation& respond(int code, std::string body = "",
                         std::optional<std::chrono::seconds> retryAfter = std::nullopt);
    Expectation& noAnswer(std::string error);
    Expectation& after(time::Duration latency);
    // The test answers this call itself; check made() before replying.
    std::shared_ptr<Call> hold();
    // A streamed request (watch); the test drives it.
    std::shared_ptr<Stream> stream();

   private:
    friend class FakeApiClient;
    bool matches(const kube::ApiRequest& r, bool isStream) const;
    std::string describe() const;

    std::string method_;
    std::string path_;
    StringMatcher query_ = ::testing::_;
    std::string queryText_;
    StringMatcher body_ = ::testing::_;
    StringMatcher contentType_ = ::testing::_;
    std::optional<std::string> verb_;
    std::optional<kube::ApiResponse> response_;
    time::Duration latency_{0};
    std::shared_ptr<Call> held_;
    std::shared_ptr<Stream> stream_;
    bool met_ = false;
  };

  explicit FakeApiClient(time::FakeClock& clock);
  ~FakeApiClient() override;
  FakeApiClient(const FakeApiClient&) = delete;
  FakeApiClient& operator=(const FakeApiClient&) = delete;

  // pathAndQuery: "/api/v1/...", or "/api/v1/...?a=b" to require exactly that query.
  Expectation& expect(std::string method, std::string pathAndQuery);

  void call(kube::ApiRequest request, std::function<void(kube::ApiResponse)> done) override;
  std::shared_ptr<kube::ApiStream> stream(kube::ApiRequest request,
                                          kube::ApiStreamCallbacks callbacks,
                                          std::chrono::milliseconds idleTimeout) override;

  // Every request made, in order (expected or not).
  const std::vector<kube::ApiRequest>& requests() const { return requests_; }
  std::size_t unmet() const;
  // Fails the test for every unmet expectation, then forgets all expectations.
  void verify();

 private:
  Expectation* match(const kube::ApiRequest& r, bool isStream);
  void unexpected(const kube::ApiRequest& r, bool isStream);

  time::FakeClock& clock_;
  std::deque<std::unique_ptr<Expectation>> expectations_;
  std::vector<kube::ApiRequest> requests_;
  std::vector<std::unique_ptr<time::Timer>> deliveries_;
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace leasehold::testing_support
