#include "publish/StatusFileWriter.h"

#include <atomic>
#include <mutex>

#include "runtime/BlockingWorker.h"

namespace leasehold::publish {

struct StatusFileWriter::Disk {
  explicit Disk(WriteFunction f) : write(std::move(f)) {}

  // On the worker (a job) or on the loop (writeNow): the mutex keeps the two apart.
  std::optional<std::string> writeLocked(const std::string& content) {
    std::lock_guard lock(mutex);
    return write(content);
  }

  // The worker's job for one value: it holds the Disk, nothing of the writer's.
  static auto job(std::shared_ptr<Disk> disk, std::string content) {
    return [disk = std::move(disk), content = std::move(content)] {
      auto problem = disk->writeLocked(content);
      disk->performed++;
      return problem;
    };
  }

  WriteFunction write;
  std::mutex mutex;
  std::atomic<std::uint64_t> performed{0};
};

StatusFileWriter::StatusFileWriter(WriteFunction write, runtime::BlockingWorker& worker)
    : disk_(std::make_shared<Disk>(std::move(write))), worker_(worker) {}

StatusFileWriter::~StatusFileWriter() {
  if (!waiting_) return;
  // Queued behind the write in progress (first in, first out), so the newest value lands last.
  worker_.run(Disk::job(disk_, std::move(waiting_->content)),
              [](const std::optional<std::string>&) {});
}

std::optional<std::string> StatusFileWriter::writeNow(const std::string& content) {
  return disk_->writeLocked(content);
}

void StatusFileWriter::write(std::string content, Outcome outcome) {
  const std::uint64_t generation = ++requested_;
  waiting_ = Waiting{std::move(content), generation, std::move(outcome)};
  if (!writing_) startNext();
}

void StatusFileWriter::startNext() {
  Waiting next = std::move(*waiting_);
  waiting_.reset();
  writing_ = true;
  // The result, on the loop: the outcome, the flush bookkeeping and the next value. `this` may
  // be gone by then (checked through alive_), and every callback may destroy it.
  worker_.run(Disk::job(disk_, std::move(next.content)),
              [this, alive = std::weak_ptr<char>(alive_), generation = next.generation,
               outcome = std::move(next.outcome)](const std::optional<std::string>& problem) {
                if (alive.expired()) return;
                writing_ = false;
                if (outcome) outcome(problem);
                if (alive.expired()) return;
                landed(generation);
                if (alive.expired()) return;
                if (waiting_ && !writing_) startNext();
              });
}

void StatusFileWriter::flush(std::function<void()> done) {
  if (landed_ >= requested_) {
    // Still asynchronous, like every other completion on the loop.
    worker_.post([alive = std::weak_ptr<char>(alive_), done = std::move(done)] {
      if (!alive.expired()) done();
    });
    return;
  }
  flushes_.emplace_back(requested_, std::move(done));
}

std::uint64_t StatusFileWriter::writesPerformed() const {
  return disk_->performed.load();
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
