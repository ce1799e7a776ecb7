// StatusFileWriter on a slow fake file system and the real BlockingWorker: the loop hands content
// over without waiting for the disk, only the latest value lands, outcomes and flush() arrive on
// the loop, the writes run on the worker's thread (the writer has none of its own), and the last
// value is written even when the writer is destroyed with it still waiting. One real-file test
// shows it with StatusFile itself.
#include "publish/StatusFileWriter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "TemporaryDirectory.h"
#include "ThreadCount.h"
#include "publish/StatusFile.h"
#include "runtime/BlockingWorker.h"

namespace leasehold::publish {
namespace {

using namespace std::chrono_literals;
using leasehold::testing::threadsInProcess;

// A disk whose writes block until the test opens the gate: as slow as the test wants, without
// timing. Every wait is bounded so a bug fails the test instead of hanging it.
class SlowDisk {
 public:
  std::optional<std::string> write(const std::string& content) {
    std::unique_lock lock(mutex_);
    started_.push_back(content);
    threads_.push_back(std::this_thread::get_id());
    changed_.notify_all();
    if (!changed_.wait_for(lock, 10s, [this] { return open_; })) {
      ADD_FAILURE() << "the gate never opened";
    }
    landed_.push_back(content);
    changed_.notify_all();
    if (!failures_.empty()) {
      auto f = failures_.front();
      failures_.erase(failures_.begin());
      return f;
    }
    return std::nullopt;
  }
  void open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }
  bool waitStarted(std::size_t n) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, 10s, [&] { return started_.size() >= n; });
  }
  std::vector<std::string> landed() const {
    std::lock_guard lock(mutex_);
    return landed_;
  }
  std::vector<std::thread::id> threads() const {
    std::lock_guard lock(mutex_);
    return threads_;
  }
  void failNext(std::string why) {
    std::lock_guard lock(mutex_);
    failures_.push_back(std::move(why));
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool open_ = false;
  std::vector<std::string> started_, landed_;
  std::vector<std::thread::id> threads_;
  std::vector<std::optional<std::string>> failures_;
};

class StatusFileWriterTest : public ::testing::Test {
 protected:
  runtime::BlockingWorker::Post post() {
    return [this](std::function<void()> f) { boost::asio::post(io_, std::move(f)); };
  }
  // Runs the loop until pred holds (bounded).
  bool runUntil(const std::function<bool()>& pred) {
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (!pred() && std::chrono::steady_clock::now() < until) {
      io_.restart();
      io_.run_for(5ms);
    }
    return pred();
  }

  StatusFileWriter::WriteFunction toDisk() {
    return [this](const std::string& c) { return disk_.write(c); };
  }

  boost::asio::io_context io_;
  SlowDisk disk_;
  runtime::BlockingWorker worker_{post()};  // last: its jobs use disk_ until it is gone
};

TEST_F(StatusFileWriterTest, HasNoThreadOfItsOwnAndWritesOnTheWorker) {
  const auto before = threadsInProcess();
  disk_.open();
  {
    StatusFileWriter writer(toDisk(), worker_);
    EXPECT_EQ(threadsInProcess(), before) << "no thread until something is written";
    bool written = false;
    writer.write("x", [&](const auto&) { written = true; });
    ASSERT_TRUE(runUntil([&] { return written; }));
    EXPECT_EQ(threadsInProcess(), before + 1) << "the worker's thread, and only that";
  }
  EXPECT_EQ(threadsInProcess(), before + 1) << "the thread is the worker's, not the writer's";
  std::thread::id workerThread;
  bool ran = false;
  worker_.run([] { return std::this_thread::get_id(); },
              [&](std::thread::id id) {
                workerThread = id;
                ran = true;
              });
  ASSERT_TRUE(runUntil([&] { return ran; }));
  ASSERT_EQ(disk_.threads().size(), 1u);
  EXPECT_EQ(disk_.threads().front(), workerThread);
  EXPECT_NE(workerThread, std::this_thread::get_id());
}

TEST_F(StatusFileWriterTest, TheLoopDoesNotWaitForTheDiskAndOnlyTheLatestValueLands) {
  StatusFileWriter writer(toDisk(), worker_);
  std::vector<std::string> outcomes;
  auto outcomeFor = [&](std::string name) {
    return [&outcomes, name](const std::optional<std::string>& p) {
      outcomes.push_back(name + (p ? ":" + *p : ":ok"));
    };
  };
  writer.write("a", outcomeFor("a"));
  ASSERT_TRUE(disk_.waitStarted(1));  // the thread is stuck inside the disk with "a"...
  // ...and the loop goes on: these return while the disk still blocks (a synchronous writer
  // would never get here before the gate opens, and the gate opens only below).
  writer.write("b", outcomeFor("b"));
  writer.write("c", outcomeFor("c"));
  writer.write("d", outcomeFor("d"));
  bool flushed = false;
  writer.flush([&] { flushed = true; });
  EXPECT_TRUE(disk_.landed().empty());
  EXPECT_FALSE(flushed);

  disk_.open();
  ASSERT_TRUE(runUntil([&] { return flushed; }));
  EXPECT_EQ(disk_.landed(), (std::vector<std::string>{"a", "d"})) << "b and c were superseded";
  EXPECT_EQ(outcomes, (std::vector<std::string>{"a:ok", "d:ok"}));
  EXPECT_EQ(writer.writesPerformed(), 2u);
}

TEST_F(StatusFileWriterTest, OutcomesCarryTheProblemOnTheLoopThread) {
  StatusFileWriter writer(toDisk(), worker_);
  disk_.open();
  disk_.failNext("cannot fsync /x: Input/output error");
  const auto loop = std::this_thread::get_id();
  std::vector<std::optional<std::string>> got;
  bool onLoop = true;
  auto outcome = [&](const std::optional<std::string>& p) {
    onLoop = onLoop && std::this_thread::get_id() == loop;
    got.push_back(p);
  };
  writer.write("1", outcome);
  ASSERT_TRUE(runUntil([&] { return got.size() == 1; }));
  writer.write("2", outcome);
  ASSERT_TRUE(runUntil([&] { return got.size() == 2; }));
  EXPECT_EQ(got, (std::vector<std::optional<std::string>>{"cannot fsync /x: Input/output error",
                                                          std::nullopt}));
  EXPECT_TRUE(onLoop);
}

TEST_F(StatusFileWriterTest, FlushWithNothingWaitingStillCompletesOnTheLoop) {
  StatusFileWriter writer(toDisk(), worker_);
  bool flushed = false;
  writer.flush([&] { flushed = true; });
  EXPECT_FALSE(flushed) << "never from inside the call";
  ASSERT_TRUE(runUntil([&] { return flushed; }));
}

TEST_F(StatusFileWriterTest, DestroyingTheWriterStillWritesTheLastValue) {
  {
    runtime::BlockingWorker worker(post());
    {
      StatusFileWriter writer(toDisk(), worker);
      writer.write("leader=true", nullptr);
      ASSERT_TRUE(disk_.waitStarted(1));
      writer.write("leader=false", [](const auto&) { ADD_FAILURE() << "the writer is gone"; });
    }  // returns while the disk still blocks: the waiting value went to the worker
    EXPECT_TRUE(disk_.landed().empty());
    disk_.open();
  }  // the worker runs what was queued before its destruction returns
  EXPECT_EQ(disk_.landed(), (std::vector<std::string>{"leader=true", "leader=false"}));
  io_.run();  // outcomes posted for a writer that is gone do nothing
}

TEST_F(StatusFileWriterTest, WritesARealFileAtomicallyOffTheLoop) {
  testing_support::TemporaryDirectory tmp;
  const auto path = tmp.path() / "leader.json";
  StatusFile file(path.string());
  StatusFileWriter writer([&file](const std::string& c) { return file.write(c); }, worker_);
  EXPECT_EQ(writer.writeNow("{\"leader\":false}\n"), std::nullopt);
  std::optional<std::string> problem = "not yet";
  writer.write("{\"leader\":true}\n", [&](const auto& p) { problem = p; });
  bool flushed = false;
  writer.flush([&] { flushed = true; });
  ASSERT_TRUE(runUntil([&] { return flushed; }));
  EXPECT_EQ(problem, std::nullopt);
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), "{\"leader\":true}\n");
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(tmp.path()))
    entries++;
  EXPECT_EQ(entries, 1u) << "no temp file left behind";
}

}  // namespace
}  // namespace leasehold::publish
