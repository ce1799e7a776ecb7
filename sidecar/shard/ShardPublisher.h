#pragma once
// What a shard group publishes besides /leader (README "Shards"): GET /shards (ShardMode::json(),
// computed when asked), GET /shards/watch (that JSON at once, then again on every change of the
// owned set) and --status-file with it, written on the BlockingWorker (publish/StatusFileWriter)
// and, at the end of the shutdown, once more and flushed. A failing status file is logged when
// the failure starts and when it ends. The same for every store; app/ShardGroupProcess wires it.
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "log/Logger.h"
#include "net/HttpServer.h"
#include "publish/JsonEventStream.h"
#include "publish/StatusFileWriter.h"
#include "shard/ShardMode.h"
#include "time/Clock.h"

namespace leasehold::shard {

class ShardPublisher {
 public:
  // Adds the routes to `http` and takes over ShardMode's owned-set callback; `alsoOnChange` runs
  // after each publication (the status server's /leader stream). `file` may be null.
  ShardPublisher(time::Clock& clock, ShardMode& shards, net::HttpServer& http,
                 std::shared_ptr<publish::StatusFileWriter> file, const log::Logger& logger,
                 std::function<void()> alsoOnChange);
  ShardPublisher(const ShardPublisher&) = delete;
  ShardPublisher& operator=(const ShardPublisher&) = delete;

  // The status file's first content, on the loop at start-up: why it cannot be written, or
  // nullopt (written, or no file).
  std::optional<std::string> writeInitialStatusFile();
  // After ShardMode's shutdown: the last content written and flushed, then `done`.
  void finish(std::function<void()> done);
  void closeStreams() { stream_.closeAll(); }

 private:
  void publish();

  ShardMode& shards_;
  publish::JsonEventStream stream_;
  std::shared_ptr<publish::StatusFileWriter> file_;
  const log::Logger& logger_;
  std::function<void()> alsoOnChange_;
  std::string fileProblem_;
};

}  // namespace leasehold::shard
