#pragma once
// Writes the status file off the event loop: fsync on a slow volume (a network disk, a busy
// node) can take longer than a renew deadline, and a loop stuck in it renews nothing.
//
// The writes run on the process's one runtime::BlockingWorker (no thread of its own); the loop
// only hands over the content. One write at a time, and latest value wins: while a write is in
// progress, newer content replaces whatever is still waiting, so a slow disk gets the newest
// JSON next instead of a backlog. Outcomes and flush() callbacks run on the loop.
//
// The write function is StatusFile::write in production (temp file, fsync, rename, directory
// fsync), a slow fake in tests. It is never called from two threads at once.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace leasehold::runtime {
class BlockingWorker;
}

namespace leasehold::publish {

class StatusFileWriter {
 public:
  using WriteFunction = std::function<std::optional<std::string>(const std::string& content)>;
  // nullopt: written; else why not.
  using Outcome = std::function<void(const std::optional<std::string>& problem)>;

  // `worker` must outlive the writer; `write` runs on it (and in writeNow(), on the loop).
  StatusFileWriter(WriteFunction write, runtime::BlockingWorker& worker);
  // Hands what is still waiting to the worker (the last value must not be lost on the way out:
  // the worker runs it before its own destruction returns). Outcomes not delivered by then are
  // dropped.
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

  // Writes performed on the worker (coalesced values are not counted).
  std::uint64_t writesPerformed() const;

 private:
  struct Waiting {
    std::string content;
    std::uint64_t generation;
    Outcome outcome;
  };
  // What the worker's jobs use; shared, so that a job still queued when the writer goes can run.
  struct Disk;
  void startNext();
  void landed(std::uint64_t generation);

  std::shared_ptr<Disk> disk_;
  runtime::BlockingWorker& worker_;
  // Loop side only.
  std::optional<Waiting> waiting_;
  bool writing_ = false;  // a job of ours is on the worker
  std::uint64_t requested_ = 0;
  std::uint64_t landed_ = 0;
  std::vector<std::pair<std::uint64_t, std::function<void()>>> flushes_;
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace leasehold::publish
