#include "publish/StatusFileWriter.h"

#include <pthread.h>

#include <utility>

namespace leasehold::publish {

StatusFileWriter::StatusFileWriter(WriteFunction write, Post post)
    : write_(std::move(write)), post_(std::move(post)), thread_([this] { runThread(); }) {
  // Shown by `ps -L` and `top -H`: the one thread besides the loop.
  ::pthread_setname_np(thread_.native_handle(), "status-file");
}

StatusFileWriter::~StatusFileWriter() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

std::optional<std::string> StatusFileWriter::writeNow(const std::string& content) {
  std::lock_guard file(fileMutex_);
  return write_(content);
}

void StatusFileWriter::write(std::string content, Outcome outcome) {
  const std::uint64_t generation = ++requested_;
  {
    std::lock_guard lock(mutex_);
    waiting_ = Waiting{std::move(content), generation, std::move(outcome)};
  }
  wake_.notify_one();
}

void StatusFileWriter::flush(std::function<void()> done) {
  if (landed_ >= requested_) {
    // Still asynchronous, like every other completion on the loop.
    post_([alive = std::weak_ptr<char>(alive_), done = std::move(done)] {
      if (!alive.expired()) done();
    });
    return;
  }
  flushes_.emplace_back(requested_, std::move(done));
}

std::uint64_t StatusFileWriter::writesPerformed() const {
  std::lock_guard lock(mutex_);
  return performed_;
}

void StatusFileWriter::runThread() {
  for (;;) {
    Waiting next;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || waiting_; });
      if (!waiting_) return;  // stopping, nothing left to write
      next = std::move(*waiting_);
      waiting_.reset();
    }
    std::optional<std::string> problem;
    {
      std::lock_guard file(fileMutex_);
      problem = write_(next.content);
    }
    {
      std::lock_guard lock(mutex_);
      performed_++;
    }
    // The loop owns everything else: the outcome, the flush bookkeeping and `this`'s lifetime
    // (checked there through alive_, since the writer may be gone when this runs).
    post_([this, alive = std::weak_ptr<char>(alive_), generation = next.generation,
           outcome = std::move(next.outcome), problem = std::move(problem)] {
      if (alive.expired()) return;
      if (outcome) outcome(problem);
      if (alive.expired()) return;
      landed(generation);
    });
  }
}

void StatusFileWriter::landed(std::uint64_t generation) {
  if (generation > landed_) landed_ = generation;
  auto due = std::move(flushes_);
  flushes_.clear();
  std::vector<std::function<void()>> ready;
  for (auto& [target, done] : due) {
    if (target <= landed_) {
      ready.push_back(std::move(done));
    } else {
      flushes_.emplace_back(target, std::move(done));
    }
  }
  for (auto& done : ready)
    done();
}

}  // namespace leasehold::publish
