// BlockingWorker on a real io_context: no thread until the first job, jobs in order one at a
// time off the loop, results on the loop and never inside submit(), a loop that goes on while a
// job blocks, and destruction with jobs still queued (they run, their results are dropped on the
// destroying thread, the thread is joined). Blocking jobs wait on a gate the test opens, so
// nothing depends on timing; every wait is bounded so that a bug fails instead of hanging.
#include "runtime/BlockingWorker.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ThreadCount.h"

namespace leasehold::runtime {
namespace {

using namespace std::chrono_literals;

using leasehold::testing::threadsInProcess;
using leasehold::testing::threadsInProcessOnceDownTo;

// A latch the test opens; jobs wait on it (bounded).
class Gate {
 public:
  void open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }
  void pass() {
    std::unique_lock lock(mutex_);
    entered_++;
    changed_.notify_all();
    if (!changed_.wait_for(lock, 10s, [this] { return open_; })) {
      ADD_FAILURE() << "the gate never opened";
    }
  }
  // Waits until a job is blocked at the gate.
  bool waitEntered() {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, 10s, [this] { return entered_ > 0; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool open_ = false;
  int entered_ = 0;
};

class BlockingWorkerTest : public ::testing::Test {
 protected:
  BlockingWorker::Post post() {
    return [this](std::function<void()> f) { boost::asio::post(io_, std::move(f)); };
  }
  bool runUntil(const std::function<bool()>& done) {
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (!done() && std::chrono::steady_clock::now() < until) {
      io_.restart();
      io_.run_one_for(5ms);
    }
    return done();
  }

  boost::asio::io_context io_;
};

TEST_F(BlockingWorkerTest, StartsItsThreadOnlyForTheFirstJobAndJoinsItOnDestruction) {
  const auto before = threadsInProcess();
  {
    BlockingWorker worker(post());
    EXPECT_FALSE(worker.started());
    EXPECT_EQ(threadsInProcess(), before) << "no thread while nobody needs one";
    bool done = false;
    worker.run([] { return 1; }, [&](int) { done = true; });
    worker.run([] { return 2; }, [&](int) {});
    EXPECT_TRUE(worker.started());
    EXPECT_EQ(threadsInProcess(), before + 1) << "one thread, however many jobs";
    ASSERT_TRUE(runUntil([&] { return done; }));
  }
  EXPECT_EQ(threadsInProcessOnceDownTo(before), before);
}

TEST_F(BlockingWorkerTest, JobsRunInOrderOneAtATimeOffTheLoopAndResultsRunOnTheLoop) {
  BlockingWorker worker(post());
  const auto loop = std::this_thread::get_id();
  std::atomic<int> running{0};
  std::atomic<bool> overlapped{false};
  std::vector<int> ran;  // touched by jobs only, and they never overlap
  std::vector<std::thread::id> jobThreads;
  std::vector<int> results;
  bool resultsOnLoop = true;
  constexpr int kJobs = 50;
  for (int i = 0; i < kJobs; i++) {
    worker.run(
        [&, i] {
          if (running.fetch_add(1) != 0) overlapped = true;
          ran.push_back(i);
          jobThreads.push_back(std::this_thread::get_id());
          running.fetch_sub(1);
          return i * 10;
        },
        [&](int value) {
          resultsOnLoop = resultsOnLoop && std::this_thread::get_id() == loop;
          results.push_back(value);
        });
  }
  ASSERT_TRUE(runUntil([&] { return results.size() == kJobs; }));
  EXPECT_FALSE(overlapped);
  for (int i = 0; i < kJobs; i++) {
    EXPECT_EQ(ran[i], i);
    EXPECT_EQ(results[i], i * 10);
  }
  for (const auto& id : jobThreads) {
    EXPECT_NE(id, loop) << "a job ran on the loop";
    EXPECT_EQ(id, jobThreads.front()) << "one thread for every job";
  }
  EXPECT_TRUE(resultsOnLoop);
}

TEST_F(BlockingWorkerTest, TheLoopGoesOnWhileAJobBlocksAndResultsWaitForTheLoop) {
  BlockingWorker worker(post());
  Gate gate;
  std::vector<std::string> results;
  worker.run(
      [&gate] {
        gate.pass();
        return std::string("slow");
      },
      [&](std::string s) { results.push_back(std::move(s)); });
  ASSERT_TRUE(gate.waitEntered());  // the worker is stuck in the first job...
  // ...and the loop is not: these return, and its other work runs, while the gate is shut.
  std::atomic<bool> secondRan{false};
  worker.run(
      [&secondRan] {
        secondRan = true;
        return std::string("next");
      },
      [&](std::string s) { results.push_back(std::move(s)); });
  bool loopWorked = false;
  boost::asio::post(io_, [&] { loopWorked = true; });
  ASSERT_TRUE(runUntil([&] { return loopWorked; }));
  EXPECT_TRUE(results.empty());
  EXPECT_FALSE(secondRan) << "first in, first out: the second waits for the first";

  gate.open();
  // Waits without running the loop.
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (!secondRan && std::chrono::steady_clock::now() < until)
    std::this_thread::yield();
  ASSERT_TRUE(secondRan);
  // Both jobs are done now, but their results run only when the loop runs them.
  EXPECT_TRUE(results.empty()) << "a result ran outside the loop";
  ASSERT_TRUE(runUntil([&] { return results.size() == 2; }));
  EXPECT_EQ(results, (std::vector<std::string>{"slow", "next"}));
}

TEST_F(BlockingWorkerTest, AJobWithoutAResultPostsNothing) {
  std::atomic<int> posted{0};
  BlockingWorker worker([&](std::function<void()> f) {
    posted++;
    boost::asio::post(io_, std::move(f));
  });
  std::atomic<bool> ran{false};
  worker.submit([&ran]() -> std::function<void()> {
    ran = true;
    return nullptr;
  });
  bool last = false;
  worker.run([] { return 0; }, [&](int) { last = true; });
  ASSERT_TRUE(runUntil([&] { return last; }));
  EXPECT_TRUE(ran);
  EXPECT_EQ(posted.load(), 1);
}

// The state letter of one of this process's threads ("S": asleep, e.g. in pthread_join).
char threadState(pid_t tid) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() ? '?' : stat[paren + 2];
}

// Records on which thread it was destroyed; held through a shared_ptr, so the copies a
// std::function makes of a capture do not count.
struct DestroyedOn {
  std::shared_ptr<std::vector<std::thread::id>> where;
  ~DestroyedOn() {
    if (where) where->push_back(std::this_thread::get_id());
  }
};

TEST_F(BlockingWorkerTest, DestructionRunsTheQueuedJobsDropsTheirResultsAndJoins) {
  const auto before = threadsInProcess();
  Gate gate;
  std::atomic<int> ran{0};
  bool resultRan = false;
  auto destroyedOn = std::make_shared<std::vector<std::thread::id>>();
  const pid_t loopTid = ::gettid();
  std::atomic<bool> destroying{false};
  // Opens the gate once this thread is asleep in the destructor: the queued jobs then finish
  // after destruction has begun, whatever the scheduling.
  std::thread opener([&] {
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < until &&
           !(destroying && threadState(loopTid) == 'S')) {
      std::this_thread::yield();
    }
    gate.open();
  });
  {
    BlockingWorker worker(post());
    worker.run(
        [&] {
          gate.pass();
          return ++ran;
        },
        [&](int) { resultRan = true; });
    EXPECT_TRUE(gate.waitEntered());
    for (int i = 0; i < 3; i++) {
      auto witness = std::make_shared<DestroyedOn>();
      witness->where = destroyedOn;
      worker.run([&] { return ++ran; }, [&resultRan, witness](int) { resultRan = true; });
    }
    destroying = true;
  }  // blocks until every queued job ran
  opener.join();
  EXPECT_EQ(ran.load(), 4) << "every queued job runs, even during destruction";
  EXPECT_EQ(threadsInProcessOnceDownTo(before), before) << "the thread was joined";
  io_.restart();
  io_.run();
  EXPECT_FALSE(resultRan) << "no result reaches the loop once destruction has begun";
  ASSERT_EQ(destroyedOn->size(), 3u);
  for (const auto& id : *destroyedOn) {
    EXPECT_EQ(id, std::this_thread::get_id())
        << "dropped results are destroyed on the destroying thread, not the worker";
  }
}

}  // namespace
}  // namespace leasehold::runtime
