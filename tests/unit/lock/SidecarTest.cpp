// The Sidecar's policy on FakeClock with the in-memory Lease: what each elector event fans out
// to and in which order, the /healthz rule, POST /leader/release, and the shutdown sequence.
// Every port is a fake that writes to one journal, so the order across ports is checked, and
// fails the test on a call it does not expect. Long because the fan-out, the /healthz table and
// the shutdown order are each a table of their own.
#include "lock/Sidecar.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "FakeClock.h"
#include "MemoryLeaseStore.h"
#include "TemporaryDirectory.h"
#include "kube/LeaseElection.h"
#include "kube/LeaseLockName.h"

namespace leasehold::lock {
namespace {

using namespace std::chrono_literals;
using time::Duration;
using Journal = std::vector<std::string>;

// One pending drain or flush: the test decides when it ends.
struct Pending {
  Duration budget{};
  std::function<void()> done;
  void finish() {
    ASSERT_TRUE(done) << "nothing to finish";
    std::exchange(done, nullptr)();
  }
};

class SidecarTest : public ::testing::Test {
 protected:
  SidecarTest() : logFile_((tmp_.path() / "log").string()) {
    logFd_ = ::open(logFile_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    logger_ = log::Logger(log::Format::kText, log::Level::kDebug, logFd_);
  }
  ~SidecarTest() override {
    sidecar_.reset();
    ::close(logFd_);
  }

  SidecarPorts ports(bool withLabel = true, bool withFile = true) {
    SidecarPorts p;
    auto store = std::make_unique<election::MemoryLeaseStore>(backend_, clock_);
    store_ = store.get();
    pendingStore_ = std::move(store);  // make() builds the election on it
    p.events.record = [this](std::string m) {
      if (closed_) ADD_FAILURE() << "event after shutdown: " << m;
      journal_.push_back("event:" + m);
    };
    p.events.drain = [this](Duration budget, std::function<void()> done) {
      EXPECT_FALSE(eventsDrain_.done) << "events drained twice";
      journal_.push_back("drain:events");
      eventsDrain_ = {budget, std::move(done)};
    };
    if (withLabel) {
      p.podLabel =
          PodLabelPort{[this](bool leads) {
                         if (closed_) ADD_FAILURE() << "label set after shutdown";
                         journal_.push_back(std::string("label:") + (leads ? "true" : "false"));
                       },
                       [this](Duration budget, std::function<void()> done) {
                         EXPECT_FALSE(labelDrain_.done) << "label drained twice";
                         journal_.push_back("drain:label");
                         labelDrain_ = {budget, std::move(done)};
                       }};
    }
    if (withFile) {
      p.statusFile = StatusFilePort{
          "/status/leader.json",
          [this](const std::string& content) -> std::optional<std::string> {
            journal_.push_back("file-now:" + leaderField(content));
            return initialFileProblem_;
          },
          [this](std::string content, std::function<void(const std::optional<std::string>&)> o) {
            if (closed_) ADD_FAILURE() << "status file written after shutdown";
            journal_.push_back("file:" + leaderField(content));
            lastFile_ = content;
            o(nextFileProblems_.empty() ? std::nullopt : nextFileProblems_.front());
            if (!nextFileProblems_.empty()) nextFileProblems_.erase(nextFileProblems_.begin());
          },
          [this](std::function<void()> done) {
            EXPECT_FALSE(flush_.done) << "flushed twice";
            journal_.push_back("flush");
            flush_ = {0s, std::move(done)};
          }};
    }
    p.leadershipMayHaveChanged = [this] { journal_.push_back("stream"); };
    return p;
  }

  Sidecar& make(SidecarPorts p, std::string id = "a") {
    SidecarConfig config{
        {election::Identity{std::move(id)}, timings_}, kube::leaseLockName("ns", "lease"), 15s};
    p.candidacy = std::make_unique<kube::LeaseElection>(
        clock_, std::move(pendingStore_),
        election::ElectorConfig{config.candidate.identity, config.candidate.timings},
        [] { return 0.5; });
    sidecar_ = std::make_unique<Sidecar>(config, std::move(p), metrics_, logger_);
    return *sidecar_;
  }
  // Started, and leading (the Lease did not exist: created at once).
  Sidecar& leading(bool withLabel = true, bool withFile = true) {
    return startLeading(ports(withLabel, withFile));
  }
  Sidecar& leadingInRunMode() { return startLeading(withCommand(ports())); }
  Sidecar& startLeading(SidecarPorts p) {
    auto& s = make(std::move(p));
    s.start();
    clock_.runDue();
    EXPECT_TRUE(s.leadership().leader);
    return s;
  }
  // The Lease is held by "b", renewed just now.
  void heldByB() {
    election::LeaseRecord other;
    other.holderIdentity = "b";
    other.leaseDurationSeconds = 15;
    other.renewTime = other.acquireTime = clock_.wallNow();
    backend_.put(other);
  }
  // Ends what the shutdown sequence waits for: the events' and the label's drains, the flush.
  void finishTheShutdownDrains() {
    ASSERT_TRUE(eventsDrain_.done) << "the shutdown sequence has not begun";
    eventsDrain_.finish();
    labelDrain_.finish();
    flush_.finish();
  }

  static std::string leaderField(const std::string& json) {
    return nlohmann::json::parse(json).at("leader").get<bool>() ? "leader=true" : "leader=false";
  }
  // Whether `part` occurs in `whole` as a contiguous run.
  static bool contains(const Journal& whole, const Journal& part) {
    return std::search(whole.begin(), whole.end(), part.begin(), part.end()) != whole.end();
  }
  // Journal entries from index `from` on.
  Journal since(std::size_t from) const {
    return Journal(journal_.begin() + static_cast<std::ptrdiff_t>(from), journal_.end());
  }
  std::string metric(const std::string& line) const {
    const auto text = metrics_.render(sidecar_->leadership());
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) {
      if (l.rfind(line + " ", 0) == 0) return l.substr(line.size() + 1);
    }
    return "<missing " + line + ">";
  }
  std::string logText() const {
    std::ifstream in(logFile_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  // Run mode: a command port whose calls go to the journal; a stop ends when the test says.
  SidecarPorts withCommand(SidecarPorts p) {
    p.command =
        CommandPort{[this](std::int64_t token, time::MonoTime validUntil) {
                      journal_.push_back("command:leading " + std::to_string(token) + " for " +
                                         time::formatDuration(validUntil - clock_.now()));
                    },
                    [this] { journal_.push_back("command:lost"); },
                    [this](std::function<void()> ready) {
                      EXPECT_FALSE(commandStop_.done) << "asked to stop twice";
                      journal_.push_back("command:stop-for-release");
                      commandStop_ = {0s, std::move(ready)};
                    },
                    [this](std::function<void()> ready) {
                      EXPECT_FALSE(commandStop_.done) << "asked to stop twice";
                      journal_.push_back("command:stop-for-shutdown");
                      commandStop_ = {0s, std::move(ready)};
                    }};
    return p;
  }

  testing_support::TemporaryDirectory tmp_;
  std::string logFile_;
  int logFd_ = -1;
  log::Logger logger_;
  time::FakeClock clock_;
  election::MemoryLeaseBackend backend_;
  election::MemoryLeaseStore* store_ = nullptr;
  std::unique_ptr<election::LeaseStore> pendingStore_;  // ports() makes it, make() uses it
  election::ElectionTimings timings_{15s, 10s, 2s, 1.2};
  publish::Metrics metrics_;
  std::unique_ptr<Sidecar> sidecar_;
  Journal journal_;
  Pending eventsDrain_, labelDrain_, flush_, commandStop_;
  std::string lastFile_;
  std::optional<std::string> initialFileProblem_;
  std::vector<std::optional<std::string>> nextFileProblems_;
  bool closed_ = false;
};

TEST_F(SidecarTest, AcquiringFansOutToStreamStatusFileEventAndLabelInThatOrder) {
  auto& s = make(ports());
  EXPECT_EQ(s.writeInitialStatusFile(), std::nullopt);
  s.start();
  EXPECT_EQ(journal_, (Journal{"file-now:leader=false", "label:false"}));
  const auto before = journal_.size();
  clock_.runDue();
  ASSERT_TRUE(s.leadership().leader);
  // Acquiring shows up in every channel, the Kubernetes ones after the local ones.
  EXPECT_TRUE(contains(since(before),
                       {"stream", "file:leader=true", "event:a became leader", "label:true"}))
      << testing::PrintToString(since(before));
  EXPECT_EQ(metric("leasehold_acquisitions_total"), "1");
  EXPECT_EQ(metric("leasehold_leader_changes_total"), "1");
  EXPECT_NE(logText().find("became leader"), std::string::npos);
}

// What one more elector event adds to each channel, once leading.
struct FanOutCase {
  const char* name;
  std::function<void(election::MemoryLeaseStore&, election::MemoryLeaseBackend&)> cause;
  Duration advance;
  Journal expected;
  // Metric lines and how much the event changes them.
  std::vector<std::pair<std::string, int>> metrics;
  const char* logged;
};

void PrintTo(const FanOutCase& c, std::ostream* os) {
  *os << c.name;
}

class SidecarFanOutTest : public SidecarTest, public ::testing::WithParamInterface<FanOutCase> {};

TEST_P(SidecarFanOutTest, AddsExactlyThis) {
  const auto& c = GetParam();
  auto& s = leading();
  (void)s;
  const auto before = journal_.size();
  std::vector<int> metricsBefore;
  for (const auto& m : c.metrics)
    metricsBefore.push_back(std::stoi(metric(m.first)));
  c.cause(*store_, backend_);
  clock_.advance(c.advance);
  EXPECT_EQ(since(before), c.expected);
  for (std::size_t i = 0; i < c.metrics.size(); i++) {
    EXPECT_EQ(std::stoi(metric(c.metrics[i].first)) - metricsBefore[i], c.metrics[i].second)
        << c.metrics[i].first;
  }
  EXPECT_NE(logText().find(c.logged), std::string::npos) << logText();
}

INSTANTIATE_TEST_SUITE_P(
    Events, SidecarFanOutTest,
    ::testing::Values(
        // A renewal changes renewTime/validUntil: stream and file, no Event, no label; then
        // the watch shows the record (kObserved), told the same way.
        FanOutCase{"Renewed",
                   [](auto&, auto&) {},
                   2s,
                   {"stream", "file:leader=true", "stream", "file:leader=true"},
                   {{"leasehold_renewals_total{result=\"success\"}", 1},
                    {"leasehold_renew_duration_seconds_count", 1},
                    {"leasehold_renewals_total{result=\"failure\"}", 0}},
                   "renewed"},
        // A failed renewal changes nothing visible: the claim holds until the deadline.
        FanOutCase{"RenewFailed",
                   [](auto& store, auto&) { store.failNext(1); },
                   2s,
                   {"stream"},
                   {{"leasehold_renewals_total{result=\"failure\"}", 1},
                    {"leasehold_renewals_total{result=\"success\"}", 0}},
                   "renewal failed"},
        // No confirmed renewal within R (the attempt times out): steps down on every channel.
        FanOutCase{
            "DeadlinePassed",
            [](auto& store, auto&) { store.setPartitioned(true); },
            10s,
            {"stream", "stream", "file:leader=false", "event:a stopped leading", "label:false"},
            {{"leasehold_is_leader", -1}, {"leasehold_renewals_total{result=\"failure\"}", 1}},
            "warn stopped leading"},
        // Somebody else's record (kubectl edit): the lease is lost at once.
        FanOutCase{"LeaseTakenOver",
                   [](auto&, auto& backend) {
                     auto r = *backend.current();
                     r.holderIdentity = "b";
                     r.leaseTransitions++;
                     backend.put(r);
                   },
                   0s,
                   {"stream", "file:leader=false", "stream", "file:leader=false",
                    "event:a stopped leading", "label:false"},
                   {{"leasehold_leader_changes_total", 1}, {"leasehold_fencing_token", 1}},
                   "new leader observed"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST_F(SidecarTest, WithoutLabelOrStatusFileOnlyEventsAndStreamAreTold) {
  auto& s = make(ports(false, false));
  EXPECT_EQ(s.writeInitialStatusFile(), std::nullopt);
  s.start();
  clock_.runDue();
  ASSERT_TRUE(s.leadership().leader);
  EXPECT_TRUE(contains(journal_, {"event:a became leader"}));
  for (const auto& entry : journal_) {
    EXPECT_TRUE(entry == "stream" || entry.rfind("event:", 0) == 0) << entry;
  }
}

TEST_F(SidecarTest, AnInitialStatusFileProblemIsReturned) {
  initialFileProblem_ = "cannot create /status/.leader.json.tmp.1: Permission denied";
  auto& s = make(ports());
  EXPECT_EQ(s.writeInitialStatusFile(), initialFileProblem_);
}

TEST_F(SidecarTest, AFailingStatusFileIsLoggedWhenTheFailureStartsAndWhenItEnds) {
  nextFileProblems_ = {"cannot fsync: EIO", "cannot fsync: EIO", std::nullopt};
  auto& s = leading();  // acquiring writes once (fails)
  clock_.advance(2s);   // renewal: fails the same way, not logged again
  clock_.advance(2s);   // renewal: written
  ASSERT_TRUE(s.leadership().leader);
  const auto log = logText();
  const auto first = log.find("cannot write the status file");
  ASSERT_NE(first, std::string::npos) << log;
  EXPECT_EQ(log.find("cannot write the status file", first + 1), std::string::npos) << log;
  EXPECT_NE(log.find("status file written again"), std::string::npos) << log;
  EXPECT_NE(log.find("/status/leader.json"), std::string::npos) << log;
}

// /healthz: a holder that cannot renew stops claiming at R but blocks the others until the
// lease expires; past D + 20 s without a successful renewal the kubelet should restart it.
struct HealthCase {
  Duration failingFor;
  bool healthy;
};
void PrintTo(const HealthCase& c, std::ostream* os) {
  *os << "failing for " << time::formatDuration(c.failingFor);
}
class SidecarHealthTest : public SidecarTest, public ::testing::WithParamInterface<HealthCase> {};

TEST_P(SidecarHealthTest, UnhealthyOnlyFromLeaseDurationPlus20Seconds) {
  auto& s = leading();
  store_->failNext(1000);
  clock_.advance(GetParam().failingFor);
  EXPECT_FALSE(s.leadership().leader);
  const auto reason = s.unhealthyReason();
  EXPECT_EQ(reason == std::nullopt, GetParam().healthy) << reason.value_or("");
  if (reason) {
    EXPECT_EQ(*reason, "holding the lease without a successful renewal for 35s");
  }
}

INSTANTIATE_TEST_SUITE_P(Rule, SidecarHealthTest,
                         ::testing::Values(HealthCase{11s, true}, HealthCase{34s, true},
                                           HealthCase{35s, false}));

TEST_F(SidecarTest, AFollowerIsHealthyHoweverLongItWaits) {
  heldByB();
  auto& s = make(ports());
  s.start();
  clock_.advance(14s);
  EXPECT_FALSE(s.leadership().leader);
  store_->failNext(1000);
  clock_.advance(60s);
  EXPECT_EQ(s.unhealthyReason(), std::nullopt);
}

TEST_F(SidecarTest, ReleaseStepsAsideForTheCooldownThenCompetesAgain) {
  auto& s = leading();
  s.release();
  EXPECT_FALSE(s.leadership().leader) << "leadership ends before the answer is sent";
  clock_.runDue();
  EXPECT_EQ(backend_.current()->holderIdentity, "");
  EXPECT_NE(logText().find("release requested: stepping aside"), std::string::npos);
  EXPECT_TRUE(contains(journal_, {"event:a stopped leading", "label:false"}));
  clock_.advance(16s);
  EXPECT_TRUE(s.leadership().leader);
  EXPECT_EQ(std::count(journal_.begin(), journal_.end(), "event:a became leader"), 2);
  EXPECT_EQ(journal_.back(), "file:leader=true");
}

TEST_F(SidecarTest, ShutdownReleasesThenDrainsEventsLabelAndStatusFileThenFinishes) {
  auto& s = leading();
  const auto token = backend_.current()->leaseTransitions;
  const auto before = journal_.size();
  int finished = 0;
  ASSERT_TRUE(s.shutdown([&] { finished++; }));
  EXPECT_TRUE(s.shuttingDown());
  EXPECT_FALSE(s.leadership().leader) << "claiming stops at once";
  clock_.runDue();  // the release write is answered
  EXPECT_EQ(backend_.current()->holderIdentity, "");
  EXPECT_EQ(backend_.current()->leaseTransitions, token);
  EXPECT_EQ(since(before),
            (Journal{"stream", "file:leader=false", "event:a stopped leading", "label:false",
                     "stream", "file:leader=false",                 // the release written
                     "stream", "file:leader=false",                 // and confirmed
                     "stream", "file:leader=false", "label:false",  // the sequence itself
                     "drain:events", "drain:label", "flush"}));
  EXPECT_EQ(eventsDrain_.budget, 2s);
  EXPECT_EQ(labelDrain_.budget, 2s);
  EXPECT_EQ(leaderField(lastFile_), "leader=false");
  // done waits for the last of the three, in any order.
  eventsDrain_.finish();
  flush_.finish();
  EXPECT_EQ(finished, 0);
  labelDrain_.finish();
  EXPECT_EQ(finished, 1);
  closed_ = true;
  clock_.advance(60s);  // nothing more happens: no claim, no event, no file write
  EXPECT_FALSE(s.leadership().leader);
  EXPECT_EQ(finished, 1);
}

TEST_F(SidecarTest, ASecondShutdownIsRefusedAndChangesNothing) {
  auto& s = leading();
  int finished = 0;
  ASSERT_TRUE(s.shutdown([&] { finished++; }));
  clock_.runDue();
  const auto journalled = journal_.size();
  EXPECT_FALSE(s.shutdown([&] { ADD_FAILURE() << "the second done must never run"; }));
  EXPECT_EQ(journal_.size(), journalled);
  finishTheShutdownDrains();
  EXPECT_EQ(finished, 1);
}

TEST_F(SidecarTest, ShutdownOfAFollowerHasNothingToReleaseAndStillDrains) {
  heldByB();
  auto& s = make(ports(false, true));
  s.start();
  clock_.runDue();
  int finished = 0;
  const auto writesBefore = store_->counters().update + store_->counters().create;
  ASSERT_TRUE(s.shutdown([&] { finished++; }));
  clock_.runDue();
  EXPECT_EQ(store_->counters().update + store_->counters().create, writesBefore);
  EXPECT_EQ(backend_.current()->holderIdentity, "b");
  EXPECT_EQ(journal_.back(), "flush");
  eventsDrain_.finish();
  EXPECT_EQ(finished, 0);
  flush_.finish();
  EXPECT_EQ(finished, 1);
}

TEST_F(SidecarTest, ReleaseWaitsForARenewalInFlightAndNeverClaimsMeanwhile) {
  auto& s = leading();
  store_->setLatency(1500ms);
  clock_.advance(2s);  // the renewal is sent; its answer is 3 s away
  ASSERT_TRUE(s.leadership().leader);
  const auto updates = store_->counters().update;
  int finished = 0;
  ASSERT_TRUE(s.shutdown([&] { finished++; }));
  EXPECT_FALSE(s.leadership().leader);
  clock_.advance(1s);
  EXPECT_EQ(store_->counters().update, updates) << "the release waits for the renewal's answer";
  EXPECT_TRUE(journal_.empty() || journal_.back() != "drain:events");
  EXPECT_FALSE(s.leadership().leader) << "a renewal confirmed during shutdown claims nothing";
  clock_.advance(5s);  // renewal answered, release sent and answered
  EXPECT_EQ(store_->counters().update, updates + 1);
  EXPECT_EQ(backend_.current()->holderIdentity, "");
  EXPECT_FALSE(s.leadership().leader);
  finishTheShutdownDrains();
  EXPECT_EQ(finished, 1);
  EXPECT_EQ(leaderField(lastFile_), "leader=false");
}

// ---- run mode (ports.command) ------------------------------------------------------------

TEST_F(SidecarTest, RunModeTellsTheCommandEveryAcquisitionAndRenewalAfterTheOtherChannels) {
  auto& s = leadingInRunMode();
  ASSERT_TRUE(s.leadership().leader);
  const std::string token = std::to_string(backend_.current()->leaseTransitions);
  // The claim lasts R from the write's send time (this store answers at once).
  EXPECT_TRUE(contains(
      journal_, {"event:a became leader", "label:true", "command:leading " + token + " for 10s"}))
      << testing::PrintToString(journal_);
  const auto before = journal_.size();
  clock_.advance(2s);
  EXPECT_TRUE(contains(since(before), {"command:leading " + token + " for 10s"}))
      << testing::PrintToString(since(before));
  EXPECT_NE(logText().find("became leader"), std::string::npos);
}

TEST_F(SidecarTest, RunModeSteppingDownTellsTheCommand) {
  auto& s = leadingInRunMode();
  store_->setPartitioned(true);
  clock_.advance(10s);
  EXPECT_FALSE(s.leadership().leader);
  EXPECT_EQ(journal_.back(), "command:lost") << testing::PrintToString(journal_);
}

TEST_F(SidecarTest, RunModeReleaseStopsTheCommandFirstAndRenewsMeanwhile) {
  auto& s = leadingInRunMode();
  s.release();
  EXPECT_EQ(journal_.back(), "command:stop-for-release");
  EXPECT_TRUE(s.leadership().leader) << "the lease is ours while the command stops";
  const auto updates = store_->counters().update;
  clock_.advance(4s);
  EXPECT_EQ(store_->counters().update, updates + 2) << "renewals go on";
  EXPECT_EQ(backend_.current()->holderIdentity, "a");
  s.release();  // a second request while the first waits: nothing new
  commandStop_.finish();
  EXPECT_FALSE(s.leadership().leader);
  clock_.runDue();
  EXPECT_EQ(backend_.current()->holderIdentity, "") << "released once the command is gone";
  EXPECT_TRUE(contains(journal_, {"event:a stopped leading", "label:false", "command:lost"}));
  EXPECT_NE(logText().find("release requested: stopping the command first"), std::string::npos);
}

TEST_F(SidecarTest, RunModeShutdownDrainsTheCommandWhileRenewingThenReleases) {
  auto& s = leadingInRunMode();
  int finished = 0;
  ASSERT_TRUE(s.shutdown([&] { finished++; }));
  EXPECT_EQ(journal_.back(), "command:stop-for-shutdown");
  EXPECT_TRUE(s.leadership().leader);
  const auto updates = store_->counters().update;
  clock_.advance(20s);  // a long drain
  EXPECT_EQ(store_->counters().update, updates + 10) << "renewals go on during the drain";
  EXPECT_TRUE(s.leadership().leader);
  EXPECT_EQ(backend_.current()->holderIdentity, "a");
  EXPECT_FALSE(eventsDrain_.done) << "nothing of the shutdown sequence before the command is gone";
  s.release();  // ignored: the shutdown releases
  commandStop_.finish();
  clock_.runDue();
  EXPECT_EQ(backend_.current()->holderIdentity, "");
  finishTheShutdownDrains();
  EXPECT_EQ(finished, 1);
  EXPECT_EQ(leaderField(lastFile_), "leader=false");
}

TEST_F(SidecarTest, RunModeHandsOverOnlyOnceTheCommandHasStopped) {
  auto& s = leadingInRunMode();
  auto r = *backend_.current();
  r.preferredHolder = "b";
  backend_.put(r);
  clock_.runDue();
  EXPECT_EQ(journal_.back(), "command:stop-for-release") << testing::PrintToString(journal_);
  clock_.advance(2s);
  EXPECT_TRUE(s.leadership().leader) << "still leading, still renewing, while the command stops";
  EXPECT_EQ(backend_.current()->holderIdentity, "a");
  commandStop_.finish();
  clock_.runDue();
  EXPECT_FALSE(s.leadership().leader);
  EXPECT_EQ(backend_.current()->holderIdentity, "") << "handed over: released for b";
  EXPECT_NE(logText().find("handover requested: stopping the command first"), std::string::npos);
}

TEST_F(SidecarTest, TwoSidecarsOnOneLoopLeadTheirOwnLeases) {
  auto& first = leading();
  election::MemoryLeaseBackend otherBackend;
  SidecarConfig config{
      {election::Identity{"a"}, timings_}, kube::leaseLockName("ns", "other"), 15s};
  SidecarPorts p;
  p.candidacy = std::make_unique<kube::LeaseElection>(
      clock_, std::make_unique<election::MemoryLeaseStore>(otherBackend, clock_),
      election::ElectorConfig{config.candidate.identity, config.candidate.timings},
      [] { return 0.5; });
  std::vector<std::string> otherEvents;
  p.events = {[&](std::string m) { otherEvents.push_back(m); },
              [](Duration, std::function<void()> done) { done(); }};
  Sidecar second(config, std::move(p), metrics_, logger_);
  second.start();
  clock_.runDue();
  EXPECT_TRUE(first.leadership().leader);
  EXPECT_TRUE(second.leadership().leader);
  EXPECT_EQ(otherEvents, (std::vector<std::string>{"a became leader"}));
  bool done = false;
  ASSERT_TRUE(second.shutdown([&] { done = true; }));
  clock_.runDue();
  EXPECT_TRUE(done);
  EXPECT_EQ(otherBackend.current()->holderIdentity, "");
  EXPECT_TRUE(first.leadership().leader) << "one Lease's shutdown leaves the other alone";
}

}  // namespace
}  // namespace leasehold::lock
