// The fake the API objects' tests run on must itself fail loudly: an unexpected request, an
// expectation never met, a stream driven after the code let go of it.
#include "FakeApiClient.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

namespace leasehold::testing_support {
namespace {

using ::testing::HasSubstr;

kube::ApiRequest get(std::string path) {
  return {"get", "GET", std::move(path), "", "application/json", std::chrono::milliseconds(5000)};
}

TEST(FakeApiClientTest, AnswersAScriptedCallOnTheClockNotFromInsideCall) {
  time::FakeClock clock;
  FakeApiClient api(clock);
  api.expect("GET", "/a?x=1").respond(409, statusBody(409, "Conflict", "moved"));
  std::optional<kube::ApiResponse> got;
  api.call(get("/a?x=1"), [&](kube::ApiResponse r) { got = std::move(r); });
  EXPECT_FALSE(got);
  clock.runDue();
  ASSERT_TRUE(got);
  EXPECT_EQ(got->code, 409);
  ASSERT_TRUE(got->status);
  EXPECT_EQ(got->status->reason, "Conflict");
  EXPECT_EQ(got->describe(), "409 Conflict: moved");
}

TEST(FakeApiClientTest, LatencyDelaysTheAnswer) {
  time::FakeClock clock;
  FakeApiClient api(clock);
  api.expect("GET", "/a").after(std::chrono::seconds(2)).noAnswer("timed out");
  bool got = false;
  api.call(get("/a"), [&](kube::ApiResponse r) {
    got = true;
    EXPECT_EQ(r.describe(), "no answer: timed out");
  });
  clock.advance(std::chrono::milliseconds(1999));
  EXPECT_FALSE(got);
  clock.advance(std::chrono::milliseconds(1));
  EXPECT_TRUE(got);
}

TEST(FakeApiClientTest, AnUnexpectedRequestFailsTheTest) {
  time::FakeClock clock;
  EXPECT_NONFATAL_FAILURE(
      {
        FakeApiClient api(clock);
        api.call(get("/b"), [](kube::ApiResponse) { ADD_FAILURE() << "answered"; });
        clock.runDue();
      },
      "unexpected request (never answered): call GET /b");
}

TEST(FakeApiClientTest, TheQueryMustMatchExactlyUnlessAMatcherIsGiven) {
  time::FakeClock clock;
  EXPECT_NONFATAL_FAILURE(
      {
        FakeApiClient api(clock);
        api.expect("GET", "/a?x=1").respond(200, "{}");
        api.call(get("/a?x=2"), [](kube::ApiResponse) {});
        api.call(get("/a?x=1"), [](kube::ApiResponse) {});  // meets it: one failure only
      },
      "unexpected request");
  FakeApiClient api(clock);
  api.expect("GET", "/a").query(HasSubstr("x=")).respond(200, "{}");
  api.call(get("/a?x=2"), [](kube::ApiResponse) {});
}

TEST(FakeApiClientTest, ABodyMismatchIsUnexpected) {
  time::FakeClock clock;
  EXPECT_NONFATAL_FAILURE(
      {
        FakeApiClient api(clock);
        api.expect("PUT", "/a").body(HasSubstr("\"rv\":\"7\"")).respond(200, "{}");
        auto r = get("/a");
        r.method = "PUT";
        r.body = R"({"rv":"6"})";
        api.call(r, [](kube::ApiResponse) {});
        r.body = R"({"rv":"7"})";
        api.call(r, [](kube::ApiResponse) {});  // meets it: one failure only
      },
      "unexpected request (never answered): call PUT /a");
}

TEST(FakeApiClientTest, AnUnmetExpectationFailsTheTestAtTheEnd) {
  time::FakeClock clock;
  EXPECT_NONFATAL_FAILURE(
      {
        FakeApiClient api(clock);
        api.expect("DELETE", "/gone").respond(200, "{}");
      },
      "expected request never made: call DELETE /gone");
}

TEST(FakeApiClientTest, HeldCallsAreAnsweredByTheTest) {
  time::FakeClock clock;
  FakeApiClient api(clock);
  auto held = api.expect("GET", "/a").hold();
  EXPECT_FALSE(held->made());
  int code = -1;
  api.call(get("/a"), [&](kube::ApiResponse r) { code = r.code; });
  ASSERT_TRUE(held->made());
  clock.runDue();
  EXPECT_EQ(code, -1);
  held->reply(503, "busy");
  EXPECT_EQ(code, 503);
  EXPECT_NONFATAL_FAILURE(held->reply(200), "twice");
}

TEST(FakeApiClientTest, StreamsAreDrivenByTheTestAndStopAtCancel) {
  time::FakeClock clock;
  FakeApiClient api(clock);
  auto s = api.expect("GET", "/w?watch=true").stream();
  std::string data;
  bool opened = false;
  kube::ApiStreamCallbacks cb;
  cb.onOpen = [&] { opened = true; };
  cb.onData = [&](std::string_view b) { data.append(b); };
  cb.onEnd = [](std::optional<std::string>) {};
  cb.onStatus = [](int, const std::string&) {};
  auto handle = api.stream(get("/w?watch=true"), cb, std::chrono::seconds(7));
  ASSERT_TRUE(s->opened());
  EXPECT_EQ(s->idleTimeout(), std::chrono::seconds(7));
  s->open();
  s->send("one");
  EXPECT_TRUE(opened);
  EXPECT_EQ(data, "one\n");
  EXPECT_TRUE(handle->active());
  handle.reset();  // dropping the handle cancels, as with the real client
  EXPECT_TRUE(s->cancelled());
  EXPECT_NONFATAL_FAILURE(s->send("two"), "which the code cancelled");
  EXPECT_EQ(data, "one\n");
}

}  // namespace
}  // namespace leasehold::testing_support
