#pragma once
// `kubectl leasehold watch NAME`: a line for the Lease as it is now, then one per change of
// holder (identity or pod) or token, each with this machine's wall time; a renewal alone is
// no line. Follows the Lease with LeaseFollower (GET, then WATCH from its resourceVersion,
// resumed when the server ends it). Runs until stop() (main calls it on SIGINT/SIGTERM), or
// --timeout passes, or --max-events lines were printed (a bound for tests and scripts).
#include <memory>
#include <optional>
#include <string>

#include "kubectl/CommandContext.h"
#include "kubectl/LeaseFollower.h"
#include "time/Clock.h"

namespace leasehold::kubectl {

class WatchCommand {
 public:
  explicit WatchCommand(CommandContext context);
  void run(Done done);
  // Ends the watch, exit code 0.
  void stop();

  static std::string header();
  // One line: TIME HOLDER POD TOKEN ("<none>" for nobody; "<deleted>" when `lease` is unset).
  static std::string line(time::WallTime at, const std::optional<election::LeaseRecord>& lease);

 private:
  void print(const std::optional<election::LeaseRecord>& lease);
  void finish(int code);

  CommandContext ctx_;
  Done done_;
  std::unique_ptr<LeaseFollower> follower_;
  std::unique_ptr<time::Timer> timeout_;
  // What the last line showed: holder, pod, token (unset: deleted; nothing printed yet: first_).
  std::optional<std::tuple<std::string, std::string, std::int32_t>> shown_;
  bool first_ = true;
  long printed_ = 0;
  bool finished_ = false;
};

}  // namespace leasehold::kubectl
