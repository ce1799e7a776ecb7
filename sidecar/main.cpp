// leasehold: wires configuration, Kubernetes access, the elector and the status API onto one
// event loop, and handles signals. All logic lives in the libraries.
#include <signal.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <cstdio>
#include <iostream>
#include <map>
#include <random>

#include "config/ConfigLoader.h"
#include "config/ConfigPrinter.h"
#include "election/AsioClock.h"
#include "election/Elector.h"
#include "kube/ApiClient.h"
#include "kube/EventRecorder.h"
#include "kube/LastSeenLeaseStore.h"
#include "kube/LeaseClient.h"
#include "kube/PodLabeler.h"
#include "kube/RestConfigLoader.h"
#include "log/Logger.h"
#include "publish/Metrics.h"
#include "publish/ProbeServer.h"
#include "publish/StatusFile.h"
#include "publish/StatusServer.h"

namespace lh = leasehold;
using lh::election::ElectorEvent;

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

  lh::kube::KubeconfigOptions kubeconfig;
  if (cfg.kubeconfig) kubeconfig.explicitPath = *cfg.kubeconfig;
  kubeconfig.context = cfg.context;
  auto rest = lh::kube::RestConfigLoader::load(kubeconfig, env);
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
  lh::election::AsioClock clock(io);
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
  lh::kube::LeaseClient leaseClient(
      api, clock, lh::kube::LeaseTarget{cfg.leaseName, ns, cfg.podName, envOr(env, "POD_IP")},
      leaseOptions, random01);
  // The Elector sees the Lease through this, so events can name the object (uid).
  lh::kube::LastSeenLeaseStore lease(leaseClient);

  // Events and pod labels go through their own client (own connection, in order): a request
  // stuck there must never queue up in front of a renewal.
  lh::kube::ApiClient sideApi(io, *rest, std::string("leasehold/") + LEASEHOLD_VERSION);
  sideApi.setWarningHandler([&](const std::string& w) { logger.warn(w); });
  sideApi.setRequestObserver([&](const std::string& verb, int code) {
    metrics.apiRequest(verb, code);
    noteRefusal(verb, code);
  });
  const auto sideDeadline = std::chrono::milliseconds(5000);
  lh::kube::EventRecorder events(sideApi, clock, {cfg.leaseName, ns, cfg.identity},
                                 {16, sideDeadline});
  events.setFailureHandler([&](const std::string& why) { logger.warn(why); });
  std::unique_ptr<lh::kube::PodLabeler> podLabeler;
  if (!cfg.podLabel.empty()) {
    podLabeler = std::make_unique<lh::kube::PodLabeler>(
        sideApi, clock, lh::kube::PodRef{podNamespace, podName}, cfg.podLabel, random01,
        lh::kube::PodLabelerOptions{std::chrono::milliseconds(500), std::chrono::seconds(30),
                                    sideDeadline});
    podLabeler->setFailureHandler([&](const std::string& why) { logger.warn(why); });
    podLabeler->setAppliedHandler([&](bool value) {
      logger.info("pod label set", {{"pod", podNamespace + "/" + podName},
                                    {"label", cfg.podLabel + "=" + (value ? "true" : "false")}});
    });
  }

  lh::election::ElectorConfig electorConfig{lh::election::Identity{cfg.identity}, cfg.timings,
                                            cfg.followerMode == lh::config::FollowerMode::Poll
                                                ? lh::election::FollowerMode::kPoll
                                                : lh::election::FollowerMode::kWatch};
  lh::election::Elector elector(clock, lease, electorConfig, random01);
  lh::net::HttpServer::Options statusOptions;
  statusOptions.address = cfg.httpAddress.host;
  statusOptions.port = cfg.httpAddress.port;
  lh::publish::StatusServer status(
      io, statusOptions, clock, {ns, cfg.leaseName},
      {[&elector] { return elector.leadership(); },
       [&] {
         logger.info("release requested: stepping aside",
                     {{"cooldown", lh::election::formatDuration(cfg.releaseCooldown)}});
         elector.releaseFor(cfg.releaseCooldown, nullptr);
       },
       cfg.releaseCooldown});
  if (auto err = status.listen()) {
    std::fprintf(stderr, "leasehold: --http-address %s: %s\n", cfg.httpAddress.toString().c_str(),
                 err->c_str());
    return 2;
  }

  // The status file: written at start (a bad path fails now, not at the first election), on
  // every elector event that changes the JSON (changes and renewals), and with leader=false on
  // the way out. A failing write is logged when the failure starts and when it ends.
  std::optional<lh::publish::StatusFile> statusFile;
  std::string statusFileProblem;
  auto writeStatusFile = [&] {
    if (!statusFile) return;
    auto problem = statusFile->write(
        lh::publish::leadershipJson(elector.leadership(), {ns, cfg.leaseName}) + "\n");
    if (problem.value_or("") == statusFileProblem) return;
    if (problem) {
      logger.error("cannot write the status file", {{"problem", *problem}});
    } else {
      logger.info("status file written again", {{"path", statusFile->path()}});
    }
    statusFileProblem = problem.value_or("");
  };
  if (!cfg.statusFile.empty()) {
    statusFile.emplace(cfg.statusFile);
    if (auto problem = statusFile->write(
            lh::publish::leadershipJson(elector.leadership(), {ns, cfg.leaseName}) + "\n")) {
      std::fprintf(stderr, "leasehold: --status-file: %s\n", problem->c_str());
      return 2;
    }
  }

  elector.setEventHandler([&](const ElectorEvent& e) {
    lh::log::Fields f{{"holder", e.holder}, {"detail", e.detail}};
    if (e.token) f.emplace_back("token", std::to_string(*e.token));
    switch (e.kind) {
      case ElectorEvent::Kind::kAcquired:
        metrics.acquired();
        metrics.leaderChanged();
        break;
      case ElectorEvent::Kind::kNewLeaderObserved:
        metrics.leaderChanged();
        break;
      case ElectorEvent::Kind::kRenewed:
        metrics.renewal(true, std::chrono::duration<double>(e.latency).count());
        break;
      case ElectorEvent::Kind::kRenewFailed:
        metrics.renewal(false, 0);
        break;
      default:
        break;
    }
    // What the main container and the operator see. A failed renewal changes nothing visible
    // (the claim holds until the deadline, which has its own event).
    status.leadershipMayHaveChanged();
    if (e.kind != ElectorEvent::Kind::kRenewFailed) writeStatusFile();
    if (e.kind == ElectorEvent::Kind::kAcquired || e.kind == ElectorEvent::Kind::kSteppedDown) {
      const bool leads = e.kind == ElectorEvent::Kind::kAcquired;
      events.record(lease.last(), cfg.identity + (leads ? " became leader" : " stopped leading"));
      if (podLabeler) podLabeler->set(leads);
    }
    switch (e.kind) {
      case ElectorEvent::Kind::kAcquired:
        return logger.info("became leader", f);
      case ElectorEvent::Kind::kSteppedDown:
        // Asked to (SIGTERM, POST /leader/release) is routine; anything else is worth a look.
        if (e.voluntary) return logger.info("stopped leading", f);
        return logger.warn("stopped leading", f);
      case ElectorEvent::Kind::kRenewFailed:
        return logger.warn("renewal failed", f);
      case ElectorEvent::Kind::kNewLeaderObserved:
        return logger.info("new leader observed", f);
      case ElectorEvent::Kind::kReleased:
        return logger.info("released the lease", f);
      case ElectorEvent::Kind::kRenewed:
      case ElectorEvent::Kind::kObserved:
        return logger.debug(lh::election::toString(e.kind), f);
    }
  });

  lh::net::HttpServer::Options probeOptions;
  probeOptions.address = cfg.probeAddress.host;
  probeOptions.port = cfg.probeAddress.port;
  const auto unhealthyAfter = cfg.timings.leaseDuration + std::chrono::seconds(20);
  lh::publish::ProbeServer probes(io, probeOptions, metrics,
                                  {[&elector] { return elector.leadership(); },
                                   [&elector, unhealthyAfter]() -> std::optional<std::string> {
                                     const auto held = elector.holdingWithoutRenewalFor();
                                     if (!held || *held < unhealthyAfter) return std::nullopt;
                                     return "holding the lease without a successful renewal for " +
                                            lh::election::formatDuration(*held);
                                   },
                                   [&apiAnswered] { return apiAnswered; }});
  if (auto err = probes.listen()) {
    std::fprintf(stderr, "leasehold: --probe-address %s: %s\n", cfg.probeAddress.toString().c_str(),
                 err->c_str());
    return 2;
  }

  // Shutdown, in order: stop claiming and release (Elector::stop, which also says leader=false
  // on every channel), rewrite the status file, set the pod label to false, give queued events
  // and the label a bounded time to go out, then cancel what is left deliberately and stop.
  bool stopping = false;
  boost::asio::signal_set signals(io, SIGTERM, SIGINT);
  const auto sideDrainBudget = std::chrono::seconds(2);
  std::function<void()> awaitSignal;
  awaitSignal = [&] {
    signals.async_wait([&](const boost::system::error_code& ec, int signo) {
      if (ec) return;
      if (stopping) {
        logger.warn("second signal: exiting at once", {{"signal", std::to_string(signo)}});
        ::_exit(1);
      }
      stopping = true;
      logger.info("shutting down: releasing the lease", {{"signal", std::to_string(signo)}});
      awaitSignal();
      elector.stop([&] {
        status.leadershipMayHaveChanged();
        writeStatusFile();
        if (podLabeler) podLabeler->set(false);
        auto finish = [&] {
          status.stop();
          probes.stop();
          api.shutdown();
          sideApi.shutdown();
          signals.cancel();
          io.stop();
        };
        // Both drain at once; whichever ends last finishes.
        auto waiting = std::make_shared<int>(podLabeler ? 2 : 1);
        auto oneDone = [waiting, finish] {
          if (--*waiting == 0) finish();
        };
        events.drain(sideDrainBudget, oneDone);
        if (podLabeler) podLabeler->drain(sideDrainBudget, oneDone);
      });
    });
  };
  awaitSignal();

  logger.info("starting",
              {{"identity", cfg.identity},
               {"lease", ns + "/" + cfg.leaseName},
               {"server", rest->server},
               {"access", rest->source},
               {"status", cfg.httpAddress.host + ":" + std::to_string(status.port())},
               {"probes", cfg.probeAddress.host + ":" + std::to_string(probes.port())},
               {"leaseDuration", lh::election::formatDuration(cfg.timings.leaseDuration)},
               {"renewDeadline", lh::election::formatDuration(cfg.timings.renewDeadline)},
               {"retryPeriod", lh::election::formatDuration(cfg.timings.retryPeriod)}});
  if (podLabeler) podLabeler->set(false);  // until this replica leads
  elector.start();
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
