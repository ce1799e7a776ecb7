#pragma once
// What every command of the plugin (get, handover, watch) runs with: the API connection, the
// clock, the parsed options, the namespace (from -n or the kubeconfig's context), the server's
// address (for error lines that name it) and where to write. main builds one for the command
// it runs; tests build one on FakeApiClient and FakeClock.
#include <memory>
#include <string>

#include "kube/ApiTransport.h"
#include "kubectl/Console.h"
#include "kubectl/LeaseFollower.h"
#include "kubectl/PluginArgs.h"
#include "time/Clock.h"

namespace leasehold::kubectl {

struct CommandContext {
  kube::ApiTransport& api;
  time::Clock& clock;
  const PluginOptions& options;
  std::string ns;
  std::string server;
  Console console;

  // A follower of the Lease the command names (options.name in ns), with the request timeout.
  std::unique_ptr<LeaseFollower> followLease(LeaseFollower::Callbacks callbacks) const {
    return std::make_unique<LeaseFollower>(api, clock, server, ns, options.name,
                                           options.requestTimeout, std::move(callbacks));
  }
};

}  // namespace leasehold::kubectl
