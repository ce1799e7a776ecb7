#pragma once
// `kubectl leasehold get [NAME] [-n NS | -A] [-o wide|json]`: one GET (a NAME) or LIST (the
// namespace's Leases, or every namespace's with -A), printed by LeaseTable with RENEWED and
// EXPIRES computed on the clock's wall time.

#include "kubectl/CommandContext.h"

namespace leasehold::kubectl {

class GetCommand {
 public:
  explicit GetCommand(CommandContext context);
  void run(Done done);

 private:
  CommandContext ctx_;
};

}  // namespace leasehold::kubectl
