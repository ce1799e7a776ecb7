#include "runtime/BlockingWorker.h"

#include <pthread.h>

namespace leasehold::runtime {

BlockingWorker::BlockingWorker(Post post, std::string threadName)
    : post_(std::move(post)), threadName_(std::move(threadName)) {}

BlockingWorker::~BlockingWorker() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
  dropped_.clear();  // here, not on the worker: results belong to the loop's side
}

void BlockingWorker::submit(Job job) {
  {
    std::lock_guard lock(mutex_);
    jobs_.push_back(std::move(job));
    if (!thread_.joinable()) thread_ = std::thread([this] { runThread(); });
  }
  wake_.notify_one();
}

bool BlockingWorker::started() const {
  std::lock_guard lock(mutex_);
  return thread_.joinable();
}

void BlockingWorker::runThread() {
  // Named from inside: the name is there before the first job runs. Longer names are refused
  // by the kernel (ERANGE) and the thread keeps the process's name.
  ::pthread_setname_np(::pthread_self(), threadName_.c_str());
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping, and every queued job has run
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    std::function<void()> result = job();
    job = nullptr;  // its captures go here, on the worker, as the header says
    if (!result) continue;
    std::lock_guard lock(mutex_);
    // Posting under the lock: once the destructor has set stopping_, nothing more reaches the
    // loop (post never runs the function inline, so this cannot re-enter the worker).
    if (stopping_) {
      dropped_.push_back(std::move(result));
    } else {
      post_(std::move(result));
    }
  }
}

}  // namespace leasehold::runtime
