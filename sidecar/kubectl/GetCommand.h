#pragma once
// `kubectl leasehold get [NAME] [-n NS | -A] [-o wide|json]`: one GET (a NAME) or LIST (the
// namespace's Leases, or every namespace's with -A), printed by LeaseTable with RENEWED and
// EXPIRES computed on the clock's wall time.
#include <string>

#include "kube/ApiTransport.h"
#include "kubectl/Console.h"
#include "kubectl/PluginArgs.h"
#include "time/Clock.h"

namespace leasehold::kubectl {

class GetCommand {
 public:
  GetCommand(kube::ApiTransport& api, time::Clock& clock, const PluginOptions& options,
             std::string ns, std::string server, Console console);
  void run(Done done);

 private:
  kube::ApiTransport& api_;
  time::Clock& clock_;
  const PluginOptions& options_;
  std::string ns_, server_;
  Console console_;
};

}  // namespace leasehold::kubectl
