#include "inject/InjectCommand.h"

#include <csignal>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <optional>
#include <string_view>
#include <variant>

#include "config/ListenAddress.h"
#include "inject/AdmissionReviewHandler.h"
#include "inject/InjectorFiles.h"
#include "inject/WebhookServer.h"
#include "log/Logger.h"
#include "runtime/AsioClock.h"

namespace leasehold::inject {

namespace {

constexpr auto kReloadPeriod = std::chrono::seconds(2);
// After SIGTERM: what is in progress gets this long, then the process exits anyway.
constexpr auto kStopGrace = std::chrono::seconds(5);

constexpr const char* kHelp =
    "Usage: leasehold inject --tls-cert-file FILE --tls-key-file FILE --params-dir DIR [options]\n"
    "\n"
    "The leasehold sidecar injector as a mutating admission webhook, for clusters without\n"
    "MutatingAdmissionPolicy (the chart's injector.mode webhook). POST /mutate takes an\n"
    "admission.k8s.io/v1 AdmissionReview: a pod created with the label leasehold.io/inject:\n"
    "\"true\" is checked and patched as the chart's admission policies do it (its annotations\n"
    "leasehold.io/lease, lease-duration, renew-deadline, retry-period, shards; the sidecar first\n"
    "among its init containers, the leasehold-status emptyDir, a read-only mount of it in every\n"
    "app container). A pod that has a container named leasehold already, another operation or\n"
    "resource, and kube-system are left alone. GET /healthz answers ok. HTTPS only, TLS 1.2+.\n"
    "\n"
    "Options:\n"
    "  --listen HOST:PORT       Address to serve on (default 0.0.0.0:8443)\n"
    "  --tls-cert-file FILE     Serving certificate, PEM (the chain after the leaf); required\n"
    "  --tls-key-file FILE      Its private key, PEM; required\n"
    "  --params-dir DIR         The injector's ConfigMap mounted as files, one per key: image,\n"
    "                           imagePullPolicy, leaseDuration, renewDeadline, retryPeriod,\n"
    "                           httpPort, probePort, logFormat, logLevel, cpuRequest,\n"
    "                           memoryRequest, memoryLimit; required. While a key is missing or\n"
    "                           bad, labelled pods are admitted without the sidecar, with a\n"
    "                           warning that they will never lead\n"
    "  --log-format FORMAT      text or json (default text)\n"
    "  --log-level LEVEL        debug, info, warn or error (default info)\n"
    "  -h,--help                Print this help and exit\n"
    "\n"
    "The parameters directory and the certificate files are read again every 2s: an edited\n"
    "ConfigMap reaches the next pod, a rotated certificate the next connection, without a\n"
    "restart. SIGTERM or SIGINT: stop accepting, finish the requests in progress (at most 5s),\n"
    "exit 0.\n"
    "\n"
    "Exit status: 0 after a signal, 2 a usage error or a failed start.\n";

struct Options {
  std::string listen = "0.0.0.0:8443";
  std::string certFile;
  std::string keyFile;
  std::string paramsDir;
  log::Format logFormat = log::Format::kText;
  log::Level logLevel = log::Level::kInfo;
};

int usageError(std::ostream& err, const std::string& problem) {
  err << "leasehold inject: " << problem << " (see leasehold inject --help)\n";
  return 2;
}

// The options, or the exit status once --help went to `out` (0) or a usage error to `err` (2).
std::variant<Options, int> parse(const std::vector<std::string>& args, std::ostream& out,
                                 std::ostream& err) {
  Options options;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "-h" || arg == "--help") {
      out << kHelp;
      return 0;
    }
    std::string flag = arg;
    std::optional<std::string> value;
    if (const auto equals = arg.find('='); arg.rfind("--", 0) == 0 && equals != std::string::npos) {
      flag = arg.substr(0, equals);
      value = arg.substr(equals + 1);
    }
    std::string* target = nullptr;
    std::string format, level;
    if (flag == "--listen") {
      target = &options.listen;
    } else if (flag == "--tls-cert-file") {
      target = &options.certFile;
    } else if (flag == "--tls-key-file") {
      target = &options.keyFile;
    } else if (flag == "--params-dir") {
      target = &options.paramsDir;
    } else if (flag == "--log-format") {
      target = &format;
    } else if (flag == "--log-level") {
      target = &level;
    } else {
      return usageError(
          err, (arg.rfind("-", 0) == 0 ? "unknown option " : "unexpected argument ") + arg);
    }
    if (!value) {
      if (i + 1 >= args.size()) return usageError(err, flag + " needs a value");
      value = args[++i];
    }
    if (value->empty()) return usageError(err, flag + " must not be empty");
    *target = *value;
    if (flag == "--log-format") {
      if (format != "text" && format != "json") {
        return usageError(err, "--log-format: \"" + format + "\" is not text or json");
      }
      options.logFormat = format == "json" ? log::Format::kJson : log::Format::kText;
    } else if (flag == "--log-level") {
      if (level == "debug") {
        options.logLevel = log::Level::kDebug;
      } else if (level == "info") {
        options.logLevel = log::Level::kInfo;
      } else if (level == "warn") {
        options.logLevel = log::Level::kWarn;
      } else if (level == "error") {
        options.logLevel = log::Level::kError;
      } else {
        return usageError(err, "--log-level: \"" + level + "\" is not debug, info, warn or error");
      }
    }
  }
  for (const auto& [flag, value] :
       {std::pair<const char*, const std::string*>{"--tls-cert-file", &options.certFile},
        {"--tls-key-file", &options.keyFile},
        {"--params-dir", &options.paramsDir}}) {
    if (value->empty()) return usageError(err, std::string(flag) + " is required");
  }
  return options;
}

log::Fields paramsFields(const InjectorParams& p) {
  return {{"image", p.image},
          {"leaseDuration", p.leaseDuration},
          {"renewDeadline", p.renewDeadline},
          {"retryPeriod", p.retryPeriod}};
}

// The files read again, the changes applied and logged. What keeps the certificate read from
// being used, if anything: at start that ends the process; later the one in use stays.
std::optional<std::string> applyChanges(InjectorFiles& files, WebhookServer& server,
                                        const log::Logger& logger) {
  const auto changes = files.refresh();
  if (changes.params) {
    if (const auto* params = std::get_if<InjectorParams>(&files.params())) {
      logger.info("injector parameters read", paramsFields(*params));
    } else {
      logger.warn("no usable injector parameters: labelled pods are admitted without the sidecar",
                  {{"error", std::get<std::string>(files.params())}});
    }
  }
  std::optional<std::string> problem;
  if (!changes.certificateError.empty()) problem = changes.certificateError;
  if (changes.certificate) {
    if (auto error = server.useCertificate(files.certPem(), files.keyPem())) {
      problem = *error;
      files.forgetCertificate();
    } else {
      logger.info("serving certificate loaded",
                  {{"cert", files.paths().certFile}, {"key", files.paths().keyFile}});
    }
  }
  return problem;
}

}  // namespace

bool InjectCommand::invoked(int argc, const char* const* argv) {
  return argc >= 2 && std::string_view(argv[1]) == kName;
}

int InjectCommand::run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  auto parsed = parse(args, out, err);
  if (const int* status = std::get_if<int>(&parsed)) return *status;
  const auto& options = std::get<Options>(parsed);
  auto listen = config::ListenAddress::parse(options.listen);
  if (const auto* error = std::get_if<config::ConfigError>(&listen)) {
    return usageError(err, "--listen: " + error->message);
  }
  const auto& address = std::get<config::ListenAddress>(listen);
  const log::Logger logger(options.logFormat, options.logLevel);

  boost::asio::io_context io;
  runtime::AsioClock clock(io, 1.0);
  InjectorFiles files({options.paramsDir, options.certFile, options.keyFile});
  WebhookServer::Options serverOptions;
  serverOptions.address = address.host;
  serverOptions.port = address.port;
  WebhookServer server(io, serverOptions);
  if (auto problem = applyChanges(files, server, logger); problem && files.certPem().empty()) {
    err << "leasehold inject: no serving certificate (--tls-cert-file, --tls-key-file): "
        << *problem << "\n";
    return 2;
  }
  server.route("GET", "/healthz", [](const net::ServerRequest&) {
    net::ServerResponse response;
    response.body = "ok\n";
    return response;
  });
  server.route("POST", "/mutate", [&](const net::ServerRequest& request) {
    const auto reply = AdmissionReviewHandler::handle(request.body, files.params());
    const bool problem =
        reply.httpStatus != 200 || reply.decision == "not injected" || reply.decision == "bad pod";
    logger.log(problem ? log::Level::kWarn : log::Level::kInfo,
               "admission review: " + reply.decision, reply.fields);
    net::ServerResponse response;
    response.status = reply.httpStatus;
    response.contentType = reply.contentType;
    response.body = reply.body;
    return response;
  });
  if (auto error = server.listen()) {
    err << "leasehold inject: --listen: " << *error << "\n";
    return 2;
  }
  logger.info("serving the admission webhook", {{"listen", address.toString()},
                                                {"port", std::to_string(server.port())},
                                                {"paramsDir", options.paramsDir}});

  std::unique_ptr<time::Timer> reload;
  std::string certificateProblem;  // logged once, not at every poll while it lasts
  reload = clock.makeTimer([&] {
    auto problem = applyChanges(files, server, logger);
    if (problem && *problem != certificateProblem) {
      logger.warn("cannot use the serving certificate read; the one in use stays",
                  {{"cert", options.certFile}, {"key", options.keyFile}, {"error", *problem}});
    }
    certificateProblem = problem.value_or("");
    reload->armAt(clock.now() + kReloadPeriod);
  });
  reload->armAt(clock.now() + kReloadPeriod);

  std::unique_ptr<time::Timer> giveUp = clock.makeTimer([&] {
    logger.warn("requests still in progress after the grace period; exiting");
    io.stop();
  });
  std::unique_ptr<time::Timer> drain;
  drain = clock.makeTimer([&] {
    if (server.connectionCount() == 0) return giveUp->disarm();
    drain->armAt(clock.now() + std::chrono::milliseconds(50));
  });
  boost::asio::signal_set signals(io, SIGTERM, SIGINT);
  signals.async_wait([&](const boost::system::error_code& ec, int signo) {
    if (ec) return;
    logger.info("stopping", {{"signal", signo == SIGTERM ? "SIGTERM" : "SIGINT"}});
    reload->disarm();
    server.stop();
    giveUp->armAt(clock.now() + kStopGrace);
    // The grace timer must not keep a loop that has nothing else left alive.
    drain->armAt(clock.now());
  });
  io.run();
  logger.info("stopped");
  return 0;
}

}  // namespace leasehold::inject
