#pragma once
// `kubectl leasehold handover NAME --to POD|IDENTITY [--wait [--timeout D]]`: the handover
// request of README "Handing over to a named replica", written exactly as an operator writes it
// with `kubectl annotate lease NAME leasehold.io/preferred-holder=POD --overwrite` (a JSON merge
// patch of that one annotation: nothing else of the Lease is touched, and no resourceVersion,
// so a renewal in between cannot make it fail). With --wait it then follows the Lease from the
// patch's resourceVersion until the named replica holds it (by identity or by its
// leasehold.io/holder-pod) and prints how long that took on the monotonic clock, from just
// before the patch was sent; --timeout bounds the wait.
#include <memory>
#include <optional>
#include <string>

#include "kubectl/CommandContext.h"
#include "kubectl/LeaseFollower.h"
#include "time/Clock.h"

namespace leasehold::kubectl {

class HandoverCommand {
 public:
  explicit HandoverCommand(CommandContext context);
  void run(Done done);

  // The merge patch body that names `to` as the preferred holder.
  static std::string patchBody(const std::string& to);
  // Whether `lease` is held by `to`, named by identity or pod name.
  static bool heldBy(const election::LeaseRecord& lease, const std::string& to);

 private:
  void patch();
  void waitFrom(const std::string& resourceVersion);
  void finish(int code);
  std::string leaseName() const;

  CommandContext ctx_;
  Done done_;
  std::optional<election::LeaseRecord> last_;
  time::MonoTime requestedAt_{};
  std::unique_ptr<LeaseFollower> follower_;
  std::unique_ptr<time::Timer> timeout_;
  bool finished_ = false;
};

}  // namespace leasehold::kubectl
