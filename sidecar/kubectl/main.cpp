// kubectl-leasehold: the kubectl plugin (`kubectl leasehold ...`). Parses the command line,
// finds the cluster the way kubectl does (--kubeconfig, $KUBECONFIG, in-cluster, ~/.kube/config;
// --context), then runs one command on its own event loop to completion. The same libraries as
// the sidecar: cluster/ for credentials (exec plugins included), net/ for TLS with
// verification, kube/ for requests and the Lease codec.
#include <signal.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <cstdio>
#include <functional>
#include <iostream>

#include "cluster/RestConfigLoader.h"
#include "config/ConfigLoader.h"
#include "kube/ApiClient.h"
#include "kubectl/GetCommand.h"
#include "kubectl/HandoverCommand.h"
#include "kubectl/PluginArgs.h"
#include "kubectl/RbacManifest.h"
#include "kubectl/WatchCommand.h"
#include "net/WorkerHostResolver.h"
#include "runtime/AsioClock.h"
#include "runtime/BlockingWorker.h"

namespace lh = leasehold;
namespace kc = leasehold::kubectl;

namespace {

constexpr int kUsageError = 2;
constexpr int kInterrupted = 130;

void errorLine(const std::string& line) {
  std::fprintf(stderr, "error: %s\n", line.c_str());
  std::fflush(stderr);
}

// `brokenOutput` runs when stdout cannot be written any more (`kubectl leasehold watch | head`):
// SIGPIPE is ignored, so the command must end itself.
kc::Console console(std::function<void()> brokenOutput) {
  return {[brokenOutput](const std::string& text) {
            if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() ||
                std::fflush(stdout) != 0) {
              brokenOutput();
            }
          },
          [](const std::string& line) {
            std::fprintf(stderr, "%s\n", line.c_str());
            std::fflush(stderr);
          },
          errorLine};
}

// `rbac`: asks nothing of the cluster; the kubeconfig only names the default namespace.
int printRbac(const kc::PluginOptions& o) {
  std::string ns = o.ns.value_or("");
  if (ns.empty()) {
    const auto env = lh::config::ConfigLoader::processEnvironment();
    auto rest = lh::cluster::RestConfigLoader::load({o.kubeconfig, o.context}, env);
    ns = rest ? rest->defaultNamespace.value_or("default") : "default";
  }
  const kc::RbacRequest request{o.name, ns, o.serviceAccount, o.fastFailover};
  if (auto problem = kc::RbacManifest::check(request)) {
    errorLine(*problem);
    return kUsageError;
  }
  std::cout << kc::RbacManifest::yaml(request);
  return std::cout.flush() ? 0 : 1;
}

int run(const kc::PluginOptions& o) {
  if (o.command == kc::Command::kRbac) return printRbac(o);
  const auto env = lh::config::ConfigLoader::processEnvironment();
  auto rest = lh::cluster::RestConfigLoader::load({o.kubeconfig, o.context}, env);
  if (!rest) {
    errorLine(rest.message());
    return 1;
  }
  const std::string ns = o.ns.value_or(rest->defaultNamespace.value_or("default"));
  const std::string server = rest->server;

  boost::asio::io_context io(1);
  lh::runtime::AsioClock clock(io);
  lh::runtime::BlockingWorker worker([&io](auto f) { boost::asio::post(io, std::move(f)); });
  lh::net::WorkerHostResolver resolver(worker);
  lh::kube::ApiClient api(io, *rest, std::string("kubectl-leasehold/") + LEASEHOLD_VERSION,
                          resolver);
  api.setWarningHandler(
      [](const std::string& w) { std::fprintf(stderr, "warning: %s\n", w.c_str()); });

  int exitCode = -1;
  auto done = [&exitCode, &io](int code) {
    if (exitCode < 0) exitCode = code;
    io.stop();
  };
  std::optional<kc::GetCommand> get;
  std::optional<kc::HandoverCommand> handover;
  std::optional<kc::WatchCommand> watch;
  // Posted: a command may be in the middle of printing when its output breaks.
  auto broken = [&io, &done] { boost::asio::post(io, [&done] { done(1); }); };
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int) {
    if (ec) return;
    if (watch) return watch->stop();  // the way a watch ends: not an error
    errorLine("interrupted");
    done(kInterrupted);
  });
  const kc::CommandContext context{api, clock, o, ns, server, console(broken)};
  switch (o.command) {
    case kc::Command::kGet:
      get.emplace(context);
      get->run(done);
      break;
    case kc::Command::kHandover:
      handover.emplace(context);
      handover->run(done);
      break;
    case kc::Command::kWatch:
      watch.emplace(context);
      watch->run(done);
      break;
    case kc::Command::kHelp:
    case kc::Command::kVersion:
    case kc::Command::kRbac:
      return 0;
  }
  io.run();
  api.shutdown();
  return exitCode < 0 ? 1 : exitCode;
}

}  // namespace

int main(int argc, char** argv) {
  ::signal(SIGPIPE, SIG_IGN);
  const std::vector<std::string> args(argv + 1, argv + argc);
  auto parsed = kc::PluginArgs::parse(args);
  if (auto* error = std::get_if<std::string>(&parsed)) {
    errorLine(*error + " (kubectl leasehold --help)");
    return kUsageError;
  }
  const auto& options = std::get<kc::PluginOptions>(parsed);
  if (options.command == kc::Command::kHelp) {
    std::cout << kc::PluginArgs::usage(options.helpFor);
    return 0;
  }
  if (options.command == kc::Command::kVersion) {
    std::cout << "kubectl-leasehold " << LEASEHOLD_VERSION << "\n";
    return 0;
  }
  return run(options);
}
