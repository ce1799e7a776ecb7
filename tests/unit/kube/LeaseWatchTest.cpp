// LeaseWatch (through LeaseClient::watch) on FakeApiClient and FakeClock: LIST then WATCH from
// the list's resourceVersion, bookmarks, resuming from the last resourceVersion, 410 (as an
// ERROR event and as a plain answer) -> relist, 401/403 -> polling with a retry after 1 s
// doubling to a minute, backoff, and
// the randomised watch rotation. Long because every transition of the watch's state machine
// is its own scripted exchange.
#include "kube/LeaseWatch.h"

#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "FakeApiClient.h"
#include "LeaseJson.h"
#include "kube/LeaseClient.h"

namespace leasehold::testing_support {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Log = std::vector<std::string>;

std::string watchPath(const std::string& rv, int timeoutSeconds = 300) {
  return std::string(kCollection) +
         "?allowWatchBookmarks=true&fieldSelector=metadata.name%3Dl&resourceVersion=" + rv +
         "&timeoutSeconds=" + std::to_string(timeoutSeconds) + "&watch=true";
}

// What the elector would be told, in order: "lease <holder> <rv>", "deleted", "healthy",
// "unhealthy".
class RecordingObserver : public election::LeaseObserver {
 public:
  void onLeaseObserved(const std::optional<election::LeaseRecord>& r) override {
    log.push_back(r ? "lease " + r->holderIdentity + " " + r->resourceVersion.value : "deleted");
  }
  void onWatchStateChanged(bool healthy) override {
    log.push_back(healthy ? "healthy" : "unhealthy");
  }
  Log log;
};

class LeaseWatchTest : public ::testing::Test {
 protected:
  LeaseWatchTest() {
    options.watchTimeoutSeconds = 300;
    options.requestDeadline = 2500ms;
    options.onWatchProblem = [this](const std::string& p) { problems.push_back(p); };
    client = std::make_unique<kube::LeaseClient>(
        api, clock, kube::LeaseTarget{kLeaseName, kNs, "", ""}, options, [this] {
          const double r = randoms.empty() ? 0.0 : randoms.front();
          if (!randoms.empty()) randoms.erase(randoms.begin());
          return r;
        });
  }
  ~LeaseWatchTest() override {
    // The watch goes before the fake, so that unmet expectations are the last word.
    client.reset();
  }

  // LIST (lease "a" at resourceVersion 10, list at 12), then the WATCH from 12, not yet opened.
  std::shared_ptr<FakeApiClient::Stream> startWatching() {
    api.expect("GET", kLeaseListPath).verb("list").respond(200, leaseListBody("12", "a", "10"));
    auto s = api.expect("GET", watchPath("12")).verb("watch").stream();
    client->watch(&observer);
    clock.runDue();
    EXPECT_TRUE(s->opened());
    return s;
  }

  // Advances to just before `delay` and checks nothing new was asked, then to it.
  void advanceExactly(time::Duration delay) {
    if (delay == time::Duration::zero()) return clock.runDue();
    const std::size_t before = api.requests().size();
    clock.advance(delay - 1ms);
    EXPECT_EQ(api.requests().size(), before) << "asked again before " << delay.count() << "ns";
    clock.advance(1ms);
  }

  time::FakeClock clock;
  FakeApiClient api{clock};
  kube::LeaseClientOptions options;
  std::vector<double> randoms;
  std::vector<std::string> problems;
  RecordingObserver observer;
  std::unique_ptr<kube::LeaseClient> client;
};

TEST_F(LeaseWatchTest, ListsThenWatchesFromTheListsResourceVersion) {
  auto s = startWatching();
  // The listed lease is delivered before the watch is even accepted.
  EXPECT_THAT(observer.log, ElementsAre("lease a 10"));
  EXPECT_EQ(s->request().deadline, 2500ms);
  EXPECT_EQ(s->idleTimeout(), 330s);  // the server's end plus a margin
  s->open();
  s->send(watchEvent("MODIFIED", "b", "13"));
  s->send(watchEvent("MODIFIED", "c", "14"));
  EXPECT_THAT(observer.log, ElementsAre("lease a 10", "healthy", "lease b 13", "lease c 14"));
  EXPECT_TRUE(problems.empty());
}

TEST_F(LeaseWatchTest, AnEmptyListMeansNoLease) {
  api.expect("GET", kLeaseListPath).respond(200, leaseListBody("5", "", ""));
  auto s = api.expect("GET", watchPath("5")).stream();
  client->watch(&observer);
  clock.runDue();
  EXPECT_THAT(observer.log, ElementsAre("deleted"));
}

TEST_F(LeaseWatchTest, EventsSplitAcrossChunksAreReassembled) {
  auto s = startWatching();
  s->open();
  const std::string line = watchEvent("ADDED", "b", "13") + "\n";
  s->data(line.substr(0, 10));
  EXPECT_THAT(observer.log, ElementsAre("lease a 10", "healthy"));
  s->data(line.substr(10));
  EXPECT_THAT(observer.log, ElementsAre("lease a 10", "healthy", "lease b 13"));
}

// How the first watch goes, and what must come next: at once or after a delay, a re-LIST or a
// WATCH resumed from a resourceVersion.
struct EndingCase {
  const char* name;
  std::function<void(FakeApiClient::Stream&)> drive;
  bool relist;         // next: LIST (answered at rv 30 with lease c 29, then WATCH from 30)
  const char* nextRv;  // else: WATCH from this resourceVersion
  time::Duration delay;
  Log wantLog;  // after the initial "lease a 10"
  bool wantCancelled;
};

void PrintTo(const EndingCase& c, std::ostream* os) {
  *os << c.name;
}

class LeaseWatchEndingTest : public LeaseWatchTest,
                             public ::testing::WithParamInterface<EndingCase> {};

TEST_P(LeaseWatchEndingTest, ResumesRelistsOrPollsAsTheEndingDemands) {
  const EndingCase& c = GetParam();
  auto s = startWatching();
  std::shared_ptr<FakeApiClient::Stream> next;
  if (c.relist) {
    api.expect("GET", kLeaseListPath).respond(200, leaseListBody("30", "c", "29"));
    next = api.expect("GET", watchPath("30")).stream();
  } else {
    next = api.expect("GET", watchPath(c.nextRv)).stream();
  }
  c.drive(*s);
  advanceExactly(c.delay);
  EXPECT_TRUE(next->opened());
  EXPECT_EQ(s->cancelled(), c.wantCancelled);
  Log want = {"lease a 10"};
  want.insert(want.end(), c.wantLog.begin(), c.wantLog.end());
  if (c.relist) want.push_back("lease c 29");
  EXPECT_EQ(observer.log, want);
}

const std::string kGone = statusBody(410, "Gone", "too old resource version: 12 (40)");
const std::string kForbidden = statusBody(
    403, "Forbidden",
    "leases.coordination.k8s.io is forbidden: User \"system:serviceaccount:ns:x\" cannot watch");

INSTANTIATE_TEST_SUITE_P(
    Table, LeaseWatchEndingTest,
    ::testing::Values(
        // The server's timeoutSeconds passed: resume where we were, at once, still healthy.
        EndingCase{"clean_end_resumes_from_the_last_event",
                   [](auto& s) {
                     s.open();
                     s.send(watchEvent("MODIFIED", "b", "13"));
                     s.end();
                   },
                   false,
                   "13",
                   0ms,
                   {"healthy", "lease b 13"},
                   false},
        EndingCase{"bookmark_moves_the_resume_point_without_an_event",
                   [](auto& s) {
                     s.open();
                     s.send(bookmarkEvent("20"));
                     s.end();
                   },
                   false,
                   "20",
                   0ms,
                   {"healthy"},
                   false},
        EndingCase{"deleted_event_then_clean_end",
                   [](auto& s) {
                     s.open();
                     s.send(watchEvent("DELETED", "b", "13"));
                     s.end();
                   },
                   false,
                   "13",
                   0ms,
                   {"healthy", "deleted"},
                   false},
        // A working watch that breaks once loses nothing by resuming at once.
        EndingCase{"first_break_of_a_working_watch_resumes_at_once",
                   [](auto& s) {
                     s.open();
                     s.send(watchEvent("MODIFIED", "b", "13"));
                     s.fail("connection reset by peer");
                   },
                   false,
                   "13",
                   0ms,
                   {"healthy", "lease b 13"},
                   false},
        EndingCase{"a_watch_that_never_opened_backs_off",
                   [](auto& s) { s.fail("connection refused"); },
                   false,
                   "12",
                   500ms,
                   {"unhealthy"},
                   false},
        // 410 as an ERROR event: our resourceVersion aged out. Relist at once, still healthy.
        EndingCase{"error_410_event_relists_at_once",
                   [](auto& s) {
                     s.open();
                     s.send(watchEvent("MODIFIED", "b", "13"));
                     s.send(errorEvent(410, "Expired", "too old resource version: 13 (40)"));
                   },
                   true,
                   "",
                   0ms,
                   {"healthy", "lease b 13"},
                   true},
        // ...but right after a list it cannot be age: a failure (the first is retried at once).
        EndingCase{"error_410_right_after_the_list_is_a_failure",
                   [](auto& s) {
                     s.open();
                     s.send(errorEvent(410, "Expired", "too old resource version"));
                   },
                   true,
                   "",
                   0ms,
                   {"healthy"},
                   true},
        EndingCase{"plain_410_relists_at_once",
                   [](auto& s) { s.status(410, kGone); },
                   true,
                   "",
                   0ms,
                   {},
                   false},
        // Denied: the elector polls; the first retry comes after a second (a starting API server
        // refuses until its RBAC cache syncs), later ones less often (AForbiddenList...).
        EndingCase{"forbidden_polls_and_relists_after_a_second",
                   [](auto& s) { s.status(403, kForbidden); },
                   true,
                   "",
                   1s,
                   {"unhealthy"},
                   false},
        EndingCase{"unauthorized_polls_and_relists_after_a_second",
                   [](auto& s) { s.status(401, statusBody(401, "Unauthorized", "Unauthorized")); },
                   true,
                   "",
                   1s,
                   {"unhealthy"},
                   false},
        EndingCase{"server_error_polls_and_relists_after_the_backoff",
                   [](auto& s) { s.status(500, statusBody(500, "InternalError", "etcd")); },
                   true,
                   "",
                   500ms,
                   {"unhealthy"},
                   false},
        EndingCase{"malformed_event_polls_and_relists_after_the_backoff",
                   [](auto& s) {
                     s.open();
                     s.send("{not json");
                   },
                   true,
                   "",
                   500ms,
                   {"healthy", "unhealthy"},
                   true},
        EndingCase{"error_event_of_another_kind_is_a_failure",
                   [](auto& s) {
                     s.open();
                     s.send(watchEvent("MODIFIED", "b", "13"));
                     s.send(errorEvent(500, "InternalError", "etcd leader changed"));
                   },
                   true,
                   "",
                   0ms,
                   {"healthy", "lease b 13"},
                   true}),
    [](const auto& info) { return std::string(info.param.name); });

TEST_F(LeaseWatchTest, ASecondFailureInARowPollsUntilTheWatchIsRestored) {
  auto s = startWatching();
  s->open();
  auto resumed = api.expect("GET", watchPath("12")).stream();
  s->fail("connection reset by peer");
  ASSERT_TRUE(resumed->opened());
  auto third = api.expect("GET", watchPath("12")).stream();
  resumed->fail("connection refused");  // the API server is restarting
  EXPECT_THAT(observer.log, ElementsAre("lease a 10", "healthy", "unhealthy"));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_THAT(problems[0], HasSubstr("watch unavailable, polling instead: watch ended: "
                                     "connection refused"));
  advanceExactly(500ms);
  ASSERT_TRUE(third->opened());
  third->open();
  EXPECT_THAT(observer.log, ElementsAre("lease a 10", "healthy", "unhealthy", "healthy"));
  EXPECT_EQ(problems.back(), "watch restored");
}

// An aged-out resourceVersion is normal (the server compacted), not a failure: a break of the
// watch that follows the relist is still the first failure, resumed at once without polling.
TEST_F(LeaseWatchTest, A410EventDoesNotCountAsAFailure) {
  auto s = startWatching();
  s->open();
  s->send(watchEvent("MODIFIED", "b", "13"));
  api.expect("GET", kLeaseListPath).respond(200, leaseListBody("30", "c", "29"));
  auto afterRelist = api.expect("GET", watchPath("30")).stream();
  s->send(errorEvent(410, "Expired", "too old resource version: 13 (40)"));
  clock.runDue();
  ASSERT_TRUE(afterRelist->opened());
  afterRelist->open();
  auto resumed = api.expect("GET", watchPath("30")).stream();
  afterRelist->fail("connection reset by peer");
  EXPECT_TRUE(resumed->opened());
  EXPECT_THAT(observer.log, ElementsAre("lease a 10", "healthy", "lease b 13", "lease c 29"));
}

TEST_F(LeaseWatchTest, ListFailuresBackOffDoublingUpToThirtySeconds) {
  api.expect("GET", kLeaseListPath).respond(503, "unavailable");
  client->watch(&observer);
  clock.runDue();
  const std::vector<time::Duration> delays = {500ms, 1s, 2s, 4s, 8s, 16s, 30s, 30s};
  for (const auto delay : delays) {
    SCOPED_TRACE(delay.count());
    api.expect("GET", kLeaseListPath).respond(503, "unavailable");
    advanceExactly(delay);
    EXPECT_EQ(api.unmet(), 0u);
  }
  // Once it works, a failure starts from the short backoff again.
  api.expect("GET", kLeaseListPath).respond(200, leaseListBody("12", "a", "10"));
  auto s = api.expect("GET", watchPath("12")).stream();
  clock.advance(30s);
  ASSERT_TRUE(s->opened());
  s->open();
  s->send(watchEvent("MODIFIED", "b", "13"));
  auto resumed = api.expect("GET", watchPath("13")).stream();
  s->fail("reset");
  auto again = api.expect("GET", watchPath("13")).stream();
  resumed->fail("refused");
  advanceExactly(500ms);
  EXPECT_TRUE(again->opened());
  EXPECT_THAT(observer.log,
              ElementsAre("unhealthy", "lease a 10", "healthy", "lease b 13", "unhealthy"));
}

// A Role that stays missing costs one LIST a minute at most, once the refusals have gone on
// for two minutes; an accepted watch starts the count again.
TEST_F(LeaseWatchTest, RefusalsAreRetriedAfterASecondThenLessOftenUpToAMinute) {
  api.expect("GET", kLeaseListPath).respond(403, kForbidden);
  client->watch(&observer);
  clock.runDue();
  EXPECT_THAT(observer.log, ElementsAre("unhealthy"));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_THAT(problems[0], HasSubstr("list: 403 Forbidden"));
  for (const time::Duration wait : {1s, 2s, 4s, 8s, 16s, 32s, 60s, 60s}) {
    api.expect("GET", kLeaseListPath).respond(403, kForbidden);
    advanceExactly(wait);
  }
  // RBAC fixed: the list passes, but the watch is still refused once (a cache behind).
  api.expect("GET", kLeaseListPath).respond(200, leaseListBody("12", "a", "10"));
  auto refusedWatch = api.expect("GET", watchPath("12")).stream();
  advanceExactly(60s);
  refusedWatch->status(403, kForbidden);
  api.expect("GET", kLeaseListPath).respond(200, leaseListBody("12", "a", "10"));
  auto s = api.expect("GET", watchPath("12")).stream();
  advanceExactly(60s);
  s->open();
  s->send(watchEvent("MODIFIED", "b", "13"));
  // Accepted: a refusal later (the server's timeout, then a stale cache) waits a second again.
  auto resumed = api.expect("GET", watchPath("13")).stream();
  s->end();
  resumed->status(403, kForbidden);
  api.expect("GET", kLeaseListPath).respond(200, leaseListBody("14", "b", "13"));
  auto again = api.expect("GET", watchPath("14")).stream();
  advanceExactly(1s);
  EXPECT_TRUE(again->opened());
  EXPECT_EQ(problems.size(), 3u) << "refused, restored, refused again";
}

// Rotation: each watch asks the server to end it after a random time in [T, 2T), like
// client-go, so that replicas do not all re-watch at the same moment; the idle timeout follows.
TEST_F(LeaseWatchTest, EachWatchEndsAtARandomTimeBetweenTAndTwiceT) {
  randoms = {0.0, 0.5, 0.999};
  auto first = startWatching();
  EXPECT_EQ(first->idleTimeout(), 330s);
  first->open();
  first->send(watchEvent("MODIFIED", "b", "13"));
  auto second = api.expect("GET", watchPath("13", 450)).stream();
  first->end();
  ASSERT_TRUE(second->opened());
  EXPECT_EQ(second->idleTimeout(), 480s);
  second->open();
  second->send(bookmarkEvent("15"));
  auto third = api.expect("GET", watchPath("15", 599)).stream();
  second->end();
  ASSERT_TRUE(third->opened());
  EXPECT_EQ(third->idleTimeout(), 629s);
  EXPECT_THAT(observer.log, ElementsAre("lease a 10", "healthy", "lease b 13"));
  EXPECT_TRUE(problems.empty());
}

TEST_F(LeaseWatchTest, StoppingTheWatchCancelsTheStreamAndRetries) {
  auto s = startWatching();
  s->open();
  client->watch(nullptr);
  EXPECT_TRUE(s->cancelled());
  // No retry timer survives: nothing is asked for later (the fake fails on any request).
  clock.advance(10min);
  EXPECT_EQ(api.requests().size(), 2u);
}

TEST_F(LeaseWatchTest, LinesAfterGivingUpOnAStreamAreIgnored) {
  auto s = startWatching();
  s->open();
  api.expect("GET", kLeaseListPath).respond(200, leaseListBody("30", "c", "29"));
  auto next = api.expect("GET", watchPath("30")).stream();
  // Two lines in one chunk: after the first (410) the watch gives up on this stream; the second
  // must not be delivered as if it were current.
  s->data(errorEvent(410, "Expired", "old") + "\n" + watchEvent("MODIFIED", "z", "99") + "\n");
  clock.runDue();
  EXPECT_THAT(observer.log, ElementsAre("lease a 10", "healthy", "lease c 29"));
}

}  // namespace
}  // namespace leasehold::testing_support
