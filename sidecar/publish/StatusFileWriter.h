#pragma once
// Writes the status file off the event loop: fsync on a slow volume (a network disk, a busy
// node) can take longer than a renew deadline, and a loop stuck in it renews nothing.
//
// One background thread (the process's only other thread) does the writes; the loop only hands
// over the content. Latest value wins: while a write is in progress, newer content replaces
// whatever is still waiting, so a slow disk gets the newest JSON next instead of a backlog.
// Outcomes and flush() callbacks run on the loop, through the post function.
//
// The write function is StatusFile::write in production (temp file, fsync, rename, directory
// fsync), a slow fake in tests. It is never called from two threads at once.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace leasehold::publish {

class StatusFileWriter {
 public:
  using WriteFunction = std::function<std::optional<std::string>(const std::string& content)>;
  // Runs a function on the event loop (boost::asio::post in production). Thread-safe.
  using Post = std::function<void(std::function<void()>)>;
  // nullopt: written; else why not.
  using Outcome = std::function<void(const std::optional<std::string>& problem)>;

  StatusFileWriter(WriteFunction write, Post post);
  // Writes what is still waiting (the last value must not be lost on the way out), then joins
  // the thread. Outcomes not delivered by then are dropped.
  ~StatusFileWriter();
  StatusFileWriter(const StatusFileWriter&) = delete;
  StatusFileWriter& operator=(const StatusFileWriter&) = delete;

  // On the loop, at once (the start-up write, so a bad path fails the start).
  std::optional<std::string> writeNow(const std::string& content);
  // On the loop: queues content, replacing any content still waiting (whose outcome then never
  // runs). Never blocks on the file system.
  void write(std::string content, Outcome outcome);
  // On the loop: done runs on the loop once everything handed to write() so far has been
  // written or has failed (or superseded by a later value that has).
  void flush(std::function<void()> done);

  // Writes the thread has performed (coalesced values are not counted).
  std::uint64_t writesPerformed() const;

 private:
  struct Waiting {
    std::string content;
    std::uint64_t generation;
    Outcome outcome;
  };
  void runThread();
  void landed(std::uint64_t generation);

  WriteFunction write_;
  Post post_;
  // Loop side only.
  std::uint64_t requested_ = 0;
  std::uint64_t landed_ = 0;
  std::vector<std::pair<std::uint64_t, std::function<void()>>> flushes_;
  std::shared_ptr<char> alive_ = std::make_shared<char>();
  // Shared with the thread.
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::optional<Waiting> waiting_;
  bool stopping_ = false;
  std::uint64_t performed_ = 0;
  std::mutex fileMutex_;  // write_ runs under it: writeNow() and the thread never overlap
  std::thread thread_;    // last: started once everything above exists
};

}  // namespace leasehold::publish
