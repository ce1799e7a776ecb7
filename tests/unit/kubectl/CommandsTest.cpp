// get, handover and watch on FakeApiClient and FakeClock: the requests they make, what they
// print, their exit codes, and the one line of each failure.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "FakeApiClient.h"
#include "FakeClock.h"
#include "kubectl/GetCommand.h"
#include "kubectl/HandoverCommand.h"
#include "kubectl/WatchCommand.h"

namespace leasehold::kubectl {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using ::testing::HasSubstr;
using testing_support::FakeApiClient;
using testing_support::statusBody;

constexpr const char* kServer = "https://127.0.0.1:6443";
constexpr const char* kItem = "/apis/coordination.k8s.io/v1/namespaces/ns/leases/demo";
constexpr const char* kCollection = "/apis/coordination.k8s.io/v1/namespaces/ns/leases";

json leaseJson(const std::string& holder, const std::string& rv, int token,
               const std::string& preferred = "") {
  json o{{"metadata", {{"name", "demo"}, {"namespace", "ns"}, {"resourceVersion", rv}}},
         {"spec",
          {{"holderIdentity", holder},
           {"leaseDurationSeconds", 15},
           {"renewTime", "2026-11-30T10:00:00.000000Z"},
           {"leaseTransitions", token}}}};
  if (!holder.empty()) o["metadata"]["annotations"]["leasehold.io/holder-pod"] = holder + "-pod";
  if (!preferred.empty()) o["metadata"]["annotations"]["leasehold.io/preferred-holder"] = preferred;
  return o;
}

std::string event(const std::string& type, const json& obj) {
  return json{{"type", type}, {"object", obj}}.dump();
}

struct Harness {
  time::FakeClock clock;
  FakeApiClient api{clock};
  std::string out, info, err;
  int exitCode = -1;
  Console console() {
    return {[this](const std::string& s) { out += s; },
            [this](const std::string& s) { info += s + "\n"; },
            [this](const std::string& s) { err += s + "\n"; }};
  }
  Done done() {
    return [this](int c) {
      EXPECT_EQ(exitCode, -1) << "done twice";
      exitCode = c;
    };
  }
  // The command on this harness, run until it waits; `o` must outlive it.
  template <class C>
  std::unique_ptr<C> run(const PluginOptions& o) {
    auto command = std::make_unique<C>(CommandContext{api, clock, o, "ns", kServer, console()});
    command->run(done());
    clock.runDue();
    return command;
  }
  // The first GET finds the Lease held by web-0 (pod web-0-pod), term 3, resourceVersion 7.
  void leaseHeldByWeb0() {
    api.expect("GET", kItem).respond(200, leaseJson("web-0", "7", 3).dump());
  }
};

PluginOptions options(Command c, const std::string& name) {
  PluginOptions o;
  o.command = c;
  o.name = name;
  return o;
}

// handover demo --to `to`, with --wait --timeout `wait` when given.
PluginOptions handoverTo(const std::string& to,
                         std::optional<std::chrono::milliseconds> wait = std::nullopt) {
  PluginOptions o = options(Command::kHandover, "demo");
  o.to = to;
  o.wait = wait.has_value();
  o.timeout = wait;
  return o;
}

TEST(GetCommandTest, OneLeaseAndTheFailures) {
  struct Case {
    int code;
    std::string body;
    int exitCode;
    std::string out, err;  // substrings; "" = must be empty
  };
  const std::vector<Case> cases{
      {200, leaseJson("web-0", "7", 3).dump(), 0, "demo   web-0    web-0-pod   3", ""},
      {404, statusBody(404, "NotFound", "leases.coordination.k8s.io \"demo\" not found"), 1, "",
       "lease \"demo\" not found in namespace \"ns\""},
      {403, statusBody(403, "Forbidden", "User \"bob\" cannot get resource \"leases\""), 1, "",
       "forbidden (403): not allowed to get leases.coordination.k8s.io \"demo\" in namespace "
       "\"ns\""},
      {401, statusBody(401, "Unauthorized", "Unauthorized"), 1, "",
       "unauthorized (401): the API server at https://127.0.0.1:6443"},
      {200, "{oops", 1, "", "the API server's answer to get leases"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.code);
    Harness h;
    const auto o = options(Command::kGet, "demo");
    h.api.expect("GET", kItem).verb("get").respond(c.code, c.body);
    auto cmd = h.run<GetCommand>(o);
    EXPECT_EQ(h.exitCode, c.exitCode);
    if (c.out.empty())
      EXPECT_EQ(h.out, "");
    else
      EXPECT_THAT(h.out, HasSubstr(c.out));
    if (c.err.empty())
      EXPECT_EQ(h.err, "");
    else
      EXPECT_THAT(h.err, HasSubstr(c.err));
    EXPECT_EQ(std::count(h.err.begin(), h.err.end(), '\n'), c.err.empty() ? 0 : 1);
  }
}

TEST(GetCommandTest, ListsTheNamespaceOrEveryNamespace) {
  Harness h;
  auto o = options(Command::kGet, "");
  h.api.expect("GET", kCollection).verb("list").respond(200, R"({"items":[]})");
  auto cmd = h.run<GetCommand>(o);
  EXPECT_EQ(h.exitCode, 0);
  EXPECT_EQ(h.info, "No leases found in namespace \"ns\".\n");

  Harness all;
  o.allNamespaces = true;
  json list{{"items", {leaseJson("web-0", "7", 3)}}};
  all.api.expect("GET", "/apis/coordination.k8s.io/v1/leases").respond(200, list.dump());
  auto cmdAll = all.run<GetCommand>(o);
  EXPECT_EQ(all.exitCode, 0);
  EXPECT_THAT(all.out, HasSubstr("NAMESPACE   NAME"));
  EXPECT_THAT(all.out, HasSubstr("ns          demo"));
}

TEST(GetCommandTest, UnreachableServerIsOneLine) {
  Harness h;
  const auto o = options(Command::kGet, "demo");
  h.api.expect("GET", kItem).noAnswer("connect: Connection refused");
  auto cmd = h.run<GetCommand>(o);
  EXPECT_EQ(h.exitCode, 1);
  EXPECT_EQ(h.err,
            "cannot reach the API server at https://127.0.0.1:6443 (get lease \"demo\"): "
            "connect: Connection refused\n");
}

TEST(HandoverCommandTest, PatchesTheAnnotationThenWaitsForTheNamedHolder) {
  Harness h;
  const auto o = handoverTo("web-1-pod", 30s);  // by pod name
  h.leaseHeldByWeb0();
  h.api.expect("PATCH", kItem)
      .verb("patch")
      .contentType("application/merge-patch+json")
      .body(R"({"metadata":{"annotations":{"leasehold.io/preferred-holder":"web-1-pod"}}})")
      .after(5ms)
      .respond(200, leaseJson("web-0", "8", 3, "web-1-pod").dump());
  auto watch = h.api.expect("GET", kCollection)
                   .query(HasSubstr("fieldSelector=metadata.name%3Ddemo&resourceVersion=8&"))
                   .stream();
  auto cmd = h.run<HandoverCommand>(o);
  h.clock.advance(5ms);
  ASSERT_TRUE(watch->opened());
  EXPECT_THAT(h.out, HasSubstr("handover requested: lease ns/demo from web-0 (pod web-0-pod) to "
                               "web-1-pod"));
  watch->open();
  h.clock.advance(10ms);
  watch->send(event("MODIFIED", leaseJson("", "9", 3, "web-1-pod")));  // released
  EXPECT_EQ(h.exitCode, -1);
  h.clock.advance(10ms);
  watch->send(event("MODIFIED", leaseJson("web-1", "10", 4)));
  EXPECT_EQ(h.exitCode, 0);
  EXPECT_THAT(h.out, HasSubstr("lease ns/demo held by web-1 (pod web-1-pod) (token 4) after "
                               "0.025s"));
  EXPECT_TRUE(watch->cancelled());
  EXPECT_EQ(h.err, "");
}

TEST(HandoverCommandTest, TimesOutWithOneLine) {
  Harness h;
  const auto o = handoverTo("nobody", 2s);
  h.leaseHeldByWeb0();
  h.api.expect("PATCH", kItem).respond(200, leaseJson("web-0", "8", 3, "nobody").dump());
  auto watch = h.api.expect("GET", kCollection).query(HasSubstr("resourceVersion=8")).stream();
  auto cmd = h.run<HandoverCommand>(o);
  watch->open();
  h.clock.advance(1999ms);
  EXPECT_EQ(h.exitCode, -1);
  h.clock.advance(1ms);
  EXPECT_EQ(h.exitCode, 1);
  EXPECT_EQ(h.err,
            "timed out after 2.000s waiting for \"nobody\" to hold lease ns/demo (holder now: "
            "web-0 (pod web-0-pod); the request is still on the Lease: does a replica with that "
            "identity or pod name run?)\n");
}

TEST(HandoverCommandTest, RefusedPatchNamesTheVerb) {
  Harness h;
  const auto o = handoverTo("web-1");
  h.leaseHeldByWeb0();
  h.api.expect("PATCH", kItem).respond(403, statusBody(403, "Forbidden", "no"));
  auto cmd = h.run<HandoverCommand>(o);
  h.clock.runDue();
  EXPECT_EQ(h.exitCode, 1);
  EXPECT_THAT(h.err, HasSubstr("forbidden (403): not allowed to patch leases"));
  EXPECT_EQ(h.out, "");
}

TEST(HandoverCommandTest, AlreadyHeldByTheNamedReplicaWritesNothing) {
  Harness h;
  const auto o = handoverTo("web-0", 30s);
  h.leaseHeldByWeb0();
  auto cmd = h.run<HandoverCommand>(o);
  EXPECT_EQ(h.exitCode, 0);
  EXPECT_THAT(h.out, HasSubstr("already held by web-0"));
}

TEST(WatchCommandTest, OneLinePerHolderOrTokenChange) {
  Harness h;
  auto o = options(Command::kWatch, "demo");
  o.maxEvents = 4;
  h.leaseHeldByWeb0();
  auto first = h.api.expect("GET", kCollection).query(HasSubstr("resourceVersion=7&")).stream();
  auto second = h.api.expect("GET", kCollection).query(HasSubstr("resourceVersion=9&")).stream();
  auto cmd = h.run<WatchCommand>(o);
  ASSERT_TRUE(first->opened());
  first->open();
  first->send(event("MODIFIED", leaseJson("web-0", "8", 3)));  // a renewal: no line
  first->send(event("MODIFIED", leaseJson("", "9", 3)));       // released: a line
  first->end();                                                // resumed from 9
  ASSERT_TRUE(second->opened());
  second->open();
  second->send(event("MODIFIED", leaseJson("web-1", "10", 4)));
  EXPECT_EQ(h.exitCode, -1);
  second->send(event("DELETED", leaseJson("web-1", "11", 4)));
  EXPECT_EQ(h.exitCode, 0);
  EXPECT_EQ(h.out,
            WatchCommand::header() +
                "2026-11-30T10:00:00.000000Z   web-0                  web-0-pod              3\n"
                "2026-11-30T10:00:00.000000Z   <none>                 <none>                 3\n"
                "2026-11-30T10:00:00.000000Z   web-1                  web-1-pod              4\n"
                "2026-11-30T10:00:00.000000Z   <deleted>                                     \n");
}

TEST(WatchCommandTest, StopEndsCleanlyAndARefusedWatchIsOneLine) {
  Harness h;
  auto o = options(Command::kWatch, "demo");
  h.leaseHeldByWeb0();
  auto s = h.api.expect("GET", kCollection).query(HasSubstr("watch=true")).stream();
  auto cmd = h.run<WatchCommand>(o);
  s->status(403, statusBody(403, "Forbidden", "cannot watch"));
  EXPECT_EQ(h.exitCode, 1);
  EXPECT_THAT(h.err, HasSubstr("forbidden (403): not allowed to watch leases"));

  Harness h2;
  h2.leaseHeldByWeb0();
  auto s2 = h2.api.expect("GET", kCollection).query(HasSubstr("watch=true")).stream();
  auto cmd2 = h2.run<WatchCommand>(o);
  s2->open();
  cmd2->stop();
  EXPECT_EQ(h2.exitCode, 0);
  EXPECT_TRUE(s2->cancelled());
}

TEST(WatchCommandTest, RereadsOn410AndGivesUpAfterThreeBreaksInARow) {
  Harness h;
  auto o = options(Command::kWatch, "demo");
  h.leaseHeldByWeb0();
  auto s1 = h.api.expect("GET", kCollection).query(HasSubstr("resourceVersion=7&")).stream();
  // 410 Expired in the stream: read the Lease again, watch from its resourceVersion.
  h.api.expect("GET", kItem).respond(200, leaseJson("web-1", "20", 4).dump());
  auto s2 = h.api.expect("GET", kCollection).query(HasSubstr("resourceVersion=20&")).stream();
  // Three breaks in a row without an event: retried after 500 ms and 1 s, then one line.
  h.api.expect("GET", kItem).respond(200, leaseJson("web-1", "21", 4).dump());
  auto s3 = h.api.expect("GET", kCollection).query(HasSubstr("resourceVersion=21&")).stream();
  h.api.expect("GET", kItem).respond(200, leaseJson("web-1", "22", 4).dump());
  auto s4 = h.api.expect("GET", kCollection).query(HasSubstr("resourceVersion=22&")).stream();
  auto cmd = h.run<WatchCommand>(o);
  s1->open();
  s1->send(json{{"type", "ERROR"},
                {"object", json::parse(statusBody(410, "Expired", "too old resource version"))}}
               .dump());
  h.clock.runDue();
  ASSERT_TRUE(s2->opened());
  EXPECT_TRUE(s1->cancelled());
  s2->open();
  s2->fail("connection reset");
  h.clock.advance(499ms);
  EXPECT_FALSE(s3->opened());
  h.clock.advance(1ms);
  h.clock.runDue();
  ASSERT_TRUE(s3->opened());
  s3->fail("connection reset");
  h.clock.advance(1000ms);
  h.clock.runDue();
  ASSERT_TRUE(s4->opened());
  EXPECT_EQ(h.exitCode, -1);
  s4->fail("connection reset");
  EXPECT_EQ(h.exitCode, 1);
  EXPECT_EQ(h.err, "the watch of lease \"demo\" broke: connection reset\n");
  // The first line, and the holder the re-read found; no line for the same holder again.
  EXPECT_EQ(std::count(h.out.begin(), h.out.end(), '\n'), 3) << h.out;
}

}  // namespace
}  // namespace leasehold::kubectl
