// leasehold: wires configuration, Kubernetes access, the elector and the status API onto one
// event loop, and handles signals. All logic lives in the libraries.
#include <signal.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <cstdio>
#include <iostream>
#include <map>
#include <random>

#include "app/Sidecar.h"
#include "cluster/RestConfigLoader.h"
#include "config/ConfigLoader.h"
#include "config/ConfigPrinter.h"
#include "kube/ApiClient.h"
#include "kube/EventRecorder.h"
#include "kube/LeaseClient.h"
#include "kube/PodLabeler.h"
#include "log/Logger.h"
#include "publish/Metrics.h"
#include "publish/ProbeServer.h"
#include "publish/StatusFile.h"
#include "publish/StatusFileWriter.h"
#include "publish/StatusServer.h"
#include "runtime/AsioClock.h"

namespace lh = leasehold;

namespace {

std::string envOr(const lh::config::ConfigLoader::Environment& env, const char* key,
                  std::string fallback = "") {
  auto it = env.find(key);
  return it == env.end() || it->second.empty() ? fallback : it->second;
}

lh::log::Logger makeLogger(const lh::config::Config& cfg) {
  using lh::config::LogLevel;
  lh::log::Level level = lh::log::Level::kInfo;
  switch (cfg.logLevel) {
    case LogLevel::Debug:
      level = lh::log::Level::kDebug;
      break;
    case LogLevel::Info:
      level = lh::log::Level::kInfo;
      break;
    case LogLevel::Warn:
      level = lh::log::Level::kWarn;
      break;
    case LogLevel::Error:
      level = lh::log::Level::kError;
      break;
  }
  return lh::log::Logger(cfg.logFormat == lh::config::LogFormat::Json ? lh::log::Format::kJson
                                                                      : lh::log::Format::kText,
                         level);
}

// Renewals that hang past the renew deadline are useless: bound every request well inside it.
std::chrono::milliseconds requestDeadline(const lh::election::ElectionTimings& t) {
  using namespace std::chrono;
  const auto half = duration_cast<milliseconds>(t.renewDeadline / 2);
  return std::clamp(half, milliseconds(500), milliseconds(5000));
}

int run(const lh::config::Config& cfg, const lh::config::ConfigLoader::Environment& env) {
  lh::log::Logger logger = makeLogger(cfg);

  lh::cluster::KubeconfigOptions kubeconfig;
  if (cfg.kubeconfig) kubeconfig.explicitPath = *cfg.kubeconfig;
  kubeconfig.context = cfg.context;
  auto rest = lh::cluster::RestConfigLoader::load(kubeconfig, env);
  if (!rest) {
    std::fprintf(stderr, "leasehold: %s\n", rest.message().c_str());
    return 2;
  }
  std::string ns = cfg.leaseNamespace.value_or(
      envOr(env, "POD_NAMESPACE", rest->defaultNamespace.value_or("default")));
  if (ns.empty()) ns = "default";
  const std::string podName = envOr(env, "POD_NAME");
  const std::string podNamespace =
      envOr(env, "POD_NAMESPACE", rest->defaultNamespace.value_or("default"));
  if (!cfg.podLabel.empty() && podName.empty()) {
    std::fprintf(stderr,
                 "leasehold: --pod-label needs POD_NAME (and POD_NAMESPACE) from the "
                 "downward API\n");
    return 2;
  }

  boost::asio::io_context io(1);
  lh::runtime::AsioClock clock(io);
  if (clock.rate() != 1.0) {
    logger.warn("TEST HOOK ACTIVE: scaled monotonic clock",
                {{"rate", std::to_string(clock.rate())}});
  }
  std::mt19937_64 rng{std::random_device{}()};
  auto random01 = [&rng] { return std::uniform_real_distribution<double>(0, 1)(rng); };

  lh::publish::Metrics metrics;
  bool apiAnswered = false;
  lh::kube::ApiClient api(io, *rest, std::string("leasehold/") + LEASEHOLD_VERSION);
  api.setWarningHandler([&](const std::string& w) { logger.warn(w); });
  // A follower's failed reads are not logged by the elector; refused credentials must still
  // reach the operator. Logged when a verb starts being refused (not on every retry).
  std::map<std::string, int> lastCodeByVerb;
  auto noteRefusal = [&](const std::string& verb, int code) {
    int& last = lastCodeByVerb[verb];
    if ((code == 401 || code == 403) && last != code) {
      logger.warn("API request refused",
                  {{"verb", verb},
                   {"code", std::to_string(code)},
                   {"hint", code == 401 ? "the credentials were not accepted"
                                        : "the credentials lack a permission (RBAC)"}});
    }
    last = code;
  };
  api.setRequestObserver([&](const std::string& verb, int code) {
    metrics.apiRequest(verb, code);
    noteRefusal(verb, code);
    if (code != 0) apiAnswered = true;
  });
  lh::kube::LeaseClientOptions leaseOptions;
  leaseOptions.requestDeadline = requestDeadline(cfg.timings);
  leaseOptions.onWatchProblem = [&logger](const std::string& what) { logger.warn(what); };
  if (auto t = envOr(env, "LEASEHOLD_WATCH_TIMEOUT_SECONDS"); !t.empty()) {
    leaseOptions.watchTimeoutSeconds = std::max(1, std::atoi(t.c_str()));
  }
  // Events and pod labels go through their own client (own connection, in order): a request
  // stuck there must never queue up in front of a renewal.
  lh::kube::ApiClient sideApi(io, *rest, std::string("leasehold/") + LEASEHOLD_VERSION);
  sideApi.setWarningHandler([&](const std::string& w) { logger.warn(w); });
  sideApi.setRequestObserver([&](const std::string& verb, int code) {
    metrics.apiRequest(verb, code);
    noteRefusal(verb, code);
  });
  const auto sideDeadline = std::chrono::milliseconds(5000);
  // Events and the pod label are owned by the Sidecar through its ports.
  auto events = std::make_shared<lh::kube::EventRecorder>(
      sideApi, clock, lh::kube::LeaseEventTarget{cfg.leaseName, ns, cfg.identity},
      lh::kube::EventRecorderOptions{16, sideDeadline});
  events->setFailureHandler([&](const std::string& why) { logger.warn(why); });
  lh::app::SidecarPorts ports;
  ports.store = std::make_unique<lh::kube::LeaseClient>(
      api, clock, lh::kube::LeaseTarget{cfg.leaseName, ns, cfg.podName, envOr(env, "POD_IP")},
      leaseOptions, random01);
  ports.events = {[events](const auto& lease, std::string message) {
                    events->record(lease, std::move(message));
                  },
                  [events](auto budget, auto done) { events->drain(budget, std::move(done)); }};
  if (!cfg.podLabel.empty()) {
    auto labeler = std::make_shared<lh::kube::PodLabeler>(
        sideApi, clock, lh::kube::PodRef{podNamespace, podName}, cfg.podLabel, random01,
        lh::kube::PodLabelerOptions{std::chrono::milliseconds(500), std::chrono::seconds(30),
                                    sideDeadline});
    labeler->setFailureHandler([&](const std::string& why) { logger.warn(why); });
    labeler->setAppliedHandler([&](bool value) {
      logger.info("pod label set", {{"pod", podNamespace + "/" + podName},
                                    {"label", cfg.podLabel + "=" + (value ? "true" : "false")}});
    });
    ports.podLabel = {
        [labeler](bool leads) { labeler->set(leads); },
        [labeler](auto budget, auto done) { labeler->drain(budget, std::move(done)); }};
  }
  if (!cfg.statusFile.empty()) {
    // Written off the loop (fsync on a slow volume must not delay a renewal): the writer's
    // thread is the only one besides the loop.
    auto file = std::make_shared<lh::publish::StatusFile>(cfg.statusFile);
    auto writer = std::make_shared<lh::publish::StatusFileWriter>(
        [file](const std::string& content) { return file->write(content); },
        [&io](std::function<void()> f) { boost::asio::post(io, std::move(f)); });
    ports.statusFile = {file->path(),
                        [writer](const std::string& content) { return writer->writeNow(content); },
                        [writer](std::string content, auto outcome) {
                          writer->write(std::move(content), std::move(outcome));
                        },
                        [writer](auto done) { writer->flush(std::move(done)); }};
  }
  std::optional<lh::publish::StatusServer> status;
  ports.leadershipMayHaveChanged = [&status] {
    if (status) status->leadershipMayHaveChanged();
  };
  lh::app::Sidecar sidecar(
      clock,
      {{lh::election::Identity{cfg.identity}, cfg.timings,
        cfg.followerMode == lh::config::FollowerMode::Poll ? lh::election::FollowerMode::kPoll
                                                           : lh::election::FollowerMode::kWatch},
       {ns, cfg.leaseName},
       cfg.releaseCooldown},
      std::move(ports), metrics, logger, random01);

  lh::net::HttpServer::Options statusOptions;
  statusOptions.address = cfg.httpAddress.host;
  statusOptions.port = cfg.httpAddress.port;
  status.emplace(io, statusOptions, clock, lh::publish::LeaseName{ns, cfg.leaseName},
                 lh::publish::StatusSource{[&sidecar] { return sidecar.leadership(); },
                                           [&sidecar] { sidecar.release(); }, cfg.releaseCooldown});
  if (auto err = status->listen()) {
    std::fprintf(stderr, "leasehold: --http-address %s: %s\n", cfg.httpAddress.toString().c_str(),
                 err->c_str());
    return 2;
  }
  if (auto problem = sidecar.writeInitialStatusFile()) {
    std::fprintf(stderr, "leasehold: --status-file: %s\n", problem->c_str());
    return 2;
  }

  lh::net::HttpServer::Options probeOptions;
  probeOptions.address = cfg.probeAddress.host;
  probeOptions.port = cfg.probeAddress.port;
  lh::publish::ProbeServer probes(
      io, probeOptions, metrics,
      {[&sidecar] { return sidecar.leadership(); },
       [&sidecar] { return sidecar.unhealthyReason(); }, [&apiAnswered] { return apiAnswered; }});
  if (auto err = probes.listen()) {
    std::fprintf(stderr, "leasehold: --probe-address %s: %s\n", cfg.probeAddress.toString().c_str(),
                 err->c_str());
    return 2;
  }

  // SIGTERM/SIGINT: the Sidecar's shutdown sequence, then whatever it left is cancelled
  // deliberately and the loop stops. A second signal exits at once.
  boost::asio::signal_set signals(io, SIGTERM, SIGINT);
  std::function<void()> awaitSignal;
  awaitSignal = [&] {
    signals.async_wait([&](const boost::system::error_code& ec, int signo) {
      if (ec) return;
      if (sidecar.shuttingDown()) {
        logger.warn("second signal: exiting at once", {{"signal", std::to_string(signo)}});
        ::_exit(1);
      }
      logger.info("shutting down: releasing the lease", {{"signal", std::to_string(signo)}});
      awaitSignal();
      sidecar.shutdown([&] {
        status->stop();
        probes.stop();
        api.shutdown();
        sideApi.shutdown();
        signals.cancel();
        io.stop();
      });
    });
  };
  awaitSignal();

  logger.info("starting", {{"identity", cfg.identity},
                           {"lease", ns + "/" + cfg.leaseName},
                           {"server", rest->server},
                           {"access", rest->source},
                           {"status", cfg.httpAddress.host + ":" + std::to_string(status->port())},
                           {"probes", cfg.probeAddress.host + ":" + std::to_string(probes.port())},
                           {"leaseDuration", lh::time::formatDuration(cfg.timings.leaseDuration)},
                           {"renewDeadline", lh::time::formatDuration(cfg.timings.renewDeadline)},
                           {"retryPeriod", lh::time::formatDuration(cfg.timings.retryPeriod)}});
  sidecar.start();
  io.run();
  logger.info("stopped");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  ::signal(SIGPIPE, SIG_IGN);
  const auto env = lh::config::ConfigLoader::processEnvironment();
  const lh::config::ConfigLoader loader(env);
  const auto outcome = loader.load(argc, argv);
  if (const auto* help = std::get_if<lh::config::HelpRequested>(&outcome)) {
    std::cout << help->text;
    return 0;
  }
  if (std::holds_alternative<lh::config::VersionRequested>(outcome)) {
    std::cout << "leasehold " << LEASEHOLD_VERSION << "\n";
    return 0;
  }
  if (const auto* error = std::get_if<lh::config::ConfigError>(&outcome)) {
    std::fprintf(stderr, "leasehold: %s\n", error->message.c_str());
    return 2;
  }
  const auto& cfg = std::get<lh::config::Config>(outcome);
  if (cfg.printConfig) {
    std::cout << lh::config::ConfigPrinter::print(cfg);
    return 0;
  }
  return run(cfg, env);
}
