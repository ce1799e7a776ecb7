// WorkerHostResolver on a real BlockingWorker with a scripted lookup: answers on the loop and
// never inside resolve(), the first lookup on the worker, later ones answered at once from the
// last good answer while the worker is stuck (a slow status file write) and refreshed in the
// background, a failed refresh that keeps the last good answer, and getaddrinfo itself for
// "localhost". Lookups that must wait block on a gate the test opens.
#include "net/WorkerHostResolver.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/post.hpp>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "EventLoop.h"
#include "runtime/BlockingWorker.h"

namespace leasehold::net::test {
namespace {

using Answer = HostResolver::Answer;
using namespace std::chrono_literals;

// A DNS the test scripts: each lookup takes the next scripted answer; calls are counted.
class ScriptedDns {
 public:
  void script(Answer answer) {
    std::lock_guard lock(mutex_);
    answers_.push_back(std::move(answer));
  }
  Answer lookUp(const std::string& host, std::uint16_t port) {
    std::lock_guard lock(mutex_);
    calls_.push_back(host + ":" + std::to_string(port));
    if (answers_.empty()) return Answer{{}, "nothing scripted"};
    auto next = std::move(answers_.front());
    answers_.pop_front();
    return next;
  }
  std::size_t calls() const {
    std::lock_guard lock(mutex_);
    return calls_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::deque<Answer> answers_;
  std::vector<std::string> calls_;
};

class Gate {
 public:
  void pass() {
    std::unique_lock lock(mutex_);
    entered_ = true;
    changed_.notify_all();
    if (!changed_.wait_for(lock, 10s, [this] { return open_; })) ADD_FAILURE() << "gate shut";
  }
  bool waitEntered() {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, 10s, [this] { return entered_; });
  }
  void open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool entered_ = false;
  bool open_ = false;
};

class WorkerHostResolverTest : public ::testing::Test {
 protected:
  std::optional<Answer> resolveOnce(HostResolver& resolver, const std::string& host) {
    std::optional<Answer> got;
    resolver.resolve(host, 6443, nullptr, [&](Answer a) { got = std::move(a); });
    EXPECT_FALSE(got) << "answered inside resolve()";
    runUntil(io, [&] { return got.has_value(); });
    return got;
  }

  boost::asio::io_context io;
  std::shared_ptr<ScriptedDns> dns = std::make_shared<ScriptedDns>();
  runtime::BlockingWorker worker{
      [this](std::function<void()> f) { boost::asio::post(io, std::move(f)); }};
  WorkerHostResolver resolver{
      worker, [dns = dns](const std::string& h, std::uint16_t p) { return dns->lookUp(h, p); }};
};

TEST_F(WorkerHostResolverTest, TheFirstLookupRunsOnTheWorkerAndAnswersOnTheLoop) {
  dns->script(Answer{{"10.0.0.1", "10.0.0.2"}, std::nullopt});
  const auto loop = std::this_thread::get_id();
  std::optional<Answer> got;
  std::thread::id answeredOn;
  resolver.resolve("api.example", 6443, nullptr, [&](Answer a) {
    answeredOn = std::this_thread::get_id();
    got = std::move(a);
  });
  EXPECT_TRUE(worker.started());
  ASSERT_TRUE(runUntil(io, [&] { return got.has_value(); }));
  EXPECT_EQ(got->addresses, (std::vector<std::string>{"10.0.0.1", "10.0.0.2"}));
  EXPECT_FALSE(got->problem);
  EXPECT_EQ(answeredOn, loop);
  EXPECT_EQ(dns->calls(), 1u);
}

TEST_F(WorkerHostResolverTest, LaterLookupsAreAnsweredAtOnceWhileTheWorkerIsBusyThenRefreshed) {
  dns->script(Answer{{"10.0.0.1"}, std::nullopt});
  ASSERT_EQ(resolveOnce(resolver, "api.example")->addresses,
            (std::vector<std::string>{"10.0.0.1"}));

  // A status file write stuck in fsync occupies the worker...
  Gate slowDisk;
  worker.run(
      [&slowDisk] {
        slowDisk.pass();
        return 0;
      },
      [](int) {});
  ASSERT_TRUE(slowDisk.waitEntered());
  // ...and a reconnect's lookup does not wait for it: the last good answer, at once.
  dns->script(Answer{{"10.0.0.9"}, std::nullopt});
  auto during = resolveOnce(resolver, "api.example");
  ASSERT_TRUE(during);
  EXPECT_EQ(during->addresses, (std::vector<std::string>{"10.0.0.1"}));
  EXPECT_EQ(dns->calls(), 1u) << "the refresh waits behind the write";
  auto again = resolveOnce(resolver, "api.example");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->addresses, (std::vector<std::string>{"10.0.0.1"}));

  slowDisk.open();
  bool behind = false;
  worker.run([] { return 0; }, [&](int) { behind = true; });
  ASSERT_TRUE(runUntil(io, [&] { return behind; }));
  EXPECT_EQ(dns->calls(), 2u) << "one refresh, however many lookups came meanwhile";
  EXPECT_EQ(resolveOnce(resolver, "api.example")->addresses, (std::vector<std::string>{"10.0.0.9"}))
      << "the refreshed answer replaced the old one";
}

TEST_F(WorkerHostResolverTest, AFailedRefreshKeepsTheLastGoodAnswer) {
  dns->script(Answer{{"10.0.0.1"}, std::nullopt});
  ASSERT_TRUE(resolveOnce(resolver, "api.example"));
  dns->script(Answer{{}, "Temporary failure in name resolution"});
  EXPECT_EQ(resolveOnce(resolver, "api.example")->addresses,
            (std::vector<std::string>{"10.0.0.1"}));
  bool behind = false;
  worker.run([] { return 0; }, [&](int) { behind = true; });
  ASSERT_TRUE(runUntil(io, [&] { return behind; }));
  EXPECT_EQ(dns->calls(), 2u);
  auto after = resolveOnce(resolver, "api.example");
  EXPECT_EQ(after->addresses, (std::vector<std::string>{"10.0.0.1"}));
  EXPECT_FALSE(after->problem);
}

TEST_F(WorkerHostResolverTest, AFailedFirstLookupIsNotRememberedAndHostsAreApart) {
  dns->script(Answer{{}, "Name or service not known"});
  auto failed = resolveOnce(resolver, "api.example");
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->problem, "Name or service not known");
  EXPECT_TRUE(failed->addresses.empty());
  dns->script(Answer{{"10.0.0.1"}, std::nullopt});
  EXPECT_EQ(resolveOnce(resolver, "api.example")->addresses, (std::vector<std::string>{"10.0.0.1"}))
      << "looked up again";
  dns->script(Answer{{"10.0.0.2"}, std::nullopt});
  EXPECT_EQ(resolveOnce(resolver, "other.example")->addresses,
            (std::vector<std::string>{"10.0.0.2"}));
  EXPECT_EQ(dns->calls(), 3u);
}

TEST_F(WorkerHostResolverTest, ALookupAbandonedBeforeItStartsIsSkipped) {
  Gate busy;
  worker.run(
      [&busy] {
        busy.pass();
        return 0;
      },
      [](int) {});
  ASSERT_TRUE(busy.waitEntered());
  auto abandoned = std::make_shared<std::atomic<bool>>(false);
  std::optional<Answer> got;
  resolver.resolve("api.example", 6443, abandoned, [&](Answer a) { got = std::move(a); });
  abandoned->store(true);
  busy.open();
  ASSERT_TRUE(runUntil(io, [&] { return got.has_value(); }));
  EXPECT_TRUE(got->problem);
  EXPECT_EQ(dns->calls(), 0u);
}

TEST_F(WorkerHostResolverTest, GetAddrInfoFindsLocalhost) {
  const auto answer = WorkerHostResolver::getAddrInfo("localhost", 443);
  ASSERT_FALSE(answer.problem) << *answer.problem;
  bool loopback = false;
  for (const auto& a : answer.addresses)
    loopback = loopback || a == "127.0.0.1" || a == "::1";
  EXPECT_TRUE(loopback) << testing::PrintToString(answer.addresses);
}

}  // namespace
}  // namespace leasehold::net::test
