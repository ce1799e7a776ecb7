#include "teardown/ScaleDownCommand.h"

#include <signal.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <string_view>

#include "cluster/RestConfigLoader.h"
#include "config/DurationParser.h"
#include "config/KubernetesNameRules.h"
#include "kube/ApiClient.h"
#include "net/WorkerHostResolver.h"
#include "runtime/AsioClock.h"
#include "runtime/BlockingWorker.h"

namespace leasehold::teardown {
namespace {

constexpr int kUsageError = 2;

std::optional<std::string> duration(const std::string& flag, const std::string& text,
                                    time::Duration& out) {
  auto parsed = config::DurationParser::parse(text);
  if (auto* error = std::get_if<config::ConfigError>(&parsed))
    return flag + " " + text + ": " + error->message;
  out = std::get<time::Duration>(parsed);
  if (out <= time::Duration::zero()) return flag + " must be more than 0, got " + text;
  return std::nullopt;
}

}  // namespace

std::string ScaleDownCommand::help() {
  return "Usage: " + std::string(kUsage) +
         "\n"
         "\n"
         "Scales the Deployment NAME to 0 replicas (a merge patch of its scale subresource)\n"
         "and waits until no pod of its selector is left, pods being deleted included. For\n"
         "the chart's pre-delete hook: every sidecar releases its Lease while its Role still\n"
         "exists, before helm uninstall deletes the Role. Needs patch on deployments/scale\n"
         "(that name) and list and watch on pods.\n"
         "\n"
         "Options:\n"
         "  --deployment NAME         The Deployment (required)\n"
         "  --namespace NS            Its namespace (default: the kubeconfig context's, or the\n"
         "                            ServiceAccount's in a pod)\n"
         "  --timeout DURATION        Give up (exit 1) this long after the start, naming the\n"
         "                            pods still there (default 60s; the pods'\n"
         "                            terminationGracePeriodSeconds and a margin)\n"
         "  --request-timeout DURATION  Each API request's deadline (default 5s)\n"
         "  --kubeconfig FILE         As for the sidecar; default $KUBECONFIG, in-cluster,\n"
         "                            ~/.kube/config\n"
         "  --context NAME            The kubeconfig context\n"
         "  -h,--help                 Print this help and exit\n"
         "\n"
         "A Deployment that does not exist is nothing to scale down (exit 0). No answer, 429\n"
         "and 5xx are retried every second until the timeout; 401 and 403 end it at once, a\n"
         "403 naming the rule the Role lacks.\n"
         "\n"
         "Exit status: 0 no pod left, 1 refused, failed, timed out or interrupted, 2 a usage\n"
         "error or no cluster configuration.\n";
}

bool ScaleDownCommand::invoked(int argc, const char* const* argv) {
  return argc >= 2 && std::string_view(argv[1]) == kName;
}

std::variant<ScaleDownArgs, std::string> ScaleDownCommand::parse(
    const std::vector<std::string>& args) {
  ScaleDownArgs a;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::optional<std::string> value;
    if (flag == "-h" || flag == "--help") {
      a.help = true;
      return a;
    }
    if (const auto eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    }
    static const char* const kFlags[] = {"--deployment",      "--namespace",  "--timeout",
                                         "--request-timeout", "--kubeconfig", "--context"};
    if (std::find(std::begin(kFlags), std::end(kFlags), flag) == std::end(kFlags))
      return (flag.rfind("-", 0) == 0 ? "unknown option " : "unexpected argument ") + flag;
    if (!value) {
      if (i + 1 == args.size()) return flag + " needs a value";
      value = args[++i];
    }
    if (flag == "--deployment") {
      if (auto bad = config::KubernetesNameRules::dns1123Subdomain(*value))
        return "--deployment \"" + *value + "\": " + *bad;
      a.options.deployment = *value;
    } else if (flag == "--namespace") {
      if (auto bad = config::KubernetesNameRules::dns1123Label(*value))
        return "--namespace \"" + *value + "\": " + *bad;
      a.options.ns = *value;
    } else if (flag == "--timeout") {
      if (auto bad = duration(flag, *value, a.options.timeout)) return *bad;
    } else if (flag == "--request-timeout") {
      time::Duration d{};
      if (auto bad = duration(flag, *value, d)) return *bad;
      a.options.requestTimeout = std::chrono::duration_cast<std::chrono::milliseconds>(d);
      if (a.options.requestTimeout.count() == 0) return "--request-timeout is under 1ms";
    } else if (flag == "--kubeconfig") {
      a.kubeconfig = *value;
    } else {
      a.context = *value;
    }
  }
  if (a.options.deployment.empty()) return std::string("--deployment NAME is required");
  return a;
}

int ScaleDownCommand::run(const std::vector<std::string>& args, std::ostream& out,
                          std::ostream& err, const Environment& env) {
  auto parsed = parse(args);
  if (const auto* problem = std::get_if<std::string>(&parsed)) {
    err << "leasehold scale-down: " << *problem << " (usage: " << kUsage
        << "; see leasehold scale-down --help)" << std::endl;
    return kUsageError;
  }
  auto a = std::get<ScaleDownArgs>(std::move(parsed));
  if (a.help) {
    out << help();
    return 0;
  }
  ::signal(SIGPIPE, SIG_IGN);
  auto rest = cluster::RestConfigLoader::load({a.kubeconfig, a.context}, env);
  if (!rest) {
    err << "leasehold scale-down: " << rest.message() << std::endl;
    return kUsageError;
  }
  if (a.options.ns.empty()) a.options.ns = rest->defaultNamespace.value_or("default");

  boost::asio::io_context io(1);
  runtime::AsioClock clock(io);
  runtime::BlockingWorker worker([&io](auto f) { boost::asio::post(io, std::move(f)); });
  net::WorkerHostResolver resolver(worker);
  kube::ApiClient api(io, *rest, std::string("leasehold/") + LEASEHOLD_VERSION + " (scale-down)",
                      resolver);
  api.setWarningHandler([&err](const std::string& w) { err << "warning: " << w << std::endl; });
  int exitCode = -1;
  auto done = [&exitCode, &io](int code) {
    if (exitCode < 0) exitCode = code;
    io.stop();
  };
  DeploymentScaleDown scaleDown(api, clock, a.options,
                                {[&out](const std::string& line) { out << line << std::endl; },
                                 [&err](const std::string& line) { err << line << std::endl; }});
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int signal) {
    if (ec) return;
    err << "leasehold scale-down: interrupted (signal " << signal << ")" << std::endl;
    done(1);
  });
  scaleDown.run(done);
  io.run();
  api.shutdown();
  return exitCode < 0 ? 1 : exitCode;
}

}  // namespace leasehold::teardown
