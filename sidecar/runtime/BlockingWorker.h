#pragma once
// The one place where the sidecar may block: a single thread, started on first use, that runs
// jobs handed over by the event loop one at a time, in the order they came, and posts each
// job's result back to the loop. Everything that cannot be done asynchronously goes here (the
// status file's fsync, getaddrinfo for the API server's host name), so the process has at most
// two threads: the loop and this one.
//
// Contract:
// - submit() and run() never wait for a job: they queue it (under a mutex the worker holds only
//   to take or hand over a job) and return. Call them from the loop thread.
// - Jobs run on the worker thread, one at a time, first in first out; a job that takes long
//   delays the ones behind it (by design: one thread).
// - A job's result (a function) is handed to `post`, which must run it on the loop; it never
//   runs on the worker thread and never inside submit().
// - A job, and what it captured, is destroyed on the worker thread: capture only what may be
//   used there (copies, shared state with its own lock, atomics); keep the loop's objects in
//   the result.
// - Jobs must not throw (an exception escaping a thread ends the process).
// - Destruction (on the loop thread, or after the loop stopped) still runs every job queued, so
//   that a last write is not lost, then joins the thread. Results of jobs that finish once
//   destruction has begun are not posted: they are destroyed on the destroying thread. A job
//   nobody wants any more should notice that itself and return at once (see
//   net::WorkerHostResolver).
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace leasehold::runtime {

class BlockingWorker {
 public:
  // Runs a function on the event loop (boost::asio::post in production). Called from the worker
  // thread: must be thread-safe.
  using Post = std::function<void(std::function<void()>)>;
  // Runs on the worker; returns what the loop runs afterwards (empty: nothing).
  using Job = std::function<std::function<void()>()>;

  // threadName: what `ps -L` and `top -H` show (at most 15 characters).
  explicit BlockingWorker(Post post, std::string threadName = "blocking-worker");
  ~BlockingWorker();
  BlockingWorker(const BlockingWorker&) = delete;
  BlockingWorker& operator=(const BlockingWorker&) = delete;

  // Queues a job; starts the thread if this is the first one.
  void submit(Job job);

  // Runs work() on the worker and then done(result) on the loop. `work` must be copyable and
  // safe to run and destroy on the worker thread; `done` is only moved there, never called or
  // destroyed there (except when destruction drops the result, see above).
  template <class Work, class Done>
  void run(Work work, Done done) {
    submit([work = std::move(work), done = std::move(done)]() mutable -> std::function<void()> {
      auto result = work();
      return [done = std::move(done), result = std::move(result)]() mutable {
        done(std::move(result));
      };
    });
  }

  // Runs onLoop on the loop, later (through Post), without a job: for completions that must
  // be asynchronous but have nothing to wait for.
  void post(std::function<void()> onLoop) { post_(std::move(onLoop)); }

  // Whether the thread has been started (it is not until the first job).
  bool started() const;

 private:
  void runThread();

  Post post_;
  std::string threadName_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job> jobs_;
  bool stopping_ = false;
  // Results of jobs that finished during destruction: destroyed by the destructor, on its thread.
  std::vector<std::function<void()>> dropped_;
  std::thread thread_;
};

}  // namespace leasehold::runtime
