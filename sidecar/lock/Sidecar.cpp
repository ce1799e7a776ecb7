#include "lock/Sidecar.h"

#include <stdexcept>
#include <utility>

namespace leasehold::lock {

using election::ElectorEvent;

namespace {
election::Candidacy& present(const std::unique_ptr<election::Candidacy>& candidacy) {
  if (!candidacy) throw std::invalid_argument("a Sidecar needs a candidacy");
  return *candidacy;
}
}  // namespace

Sidecar::Sidecar(SidecarConfig config, SidecarPorts ports, publish::Metrics& metrics,
                 const log::Logger& logger)
    : config_(std::move(config)),
      ports_(std::move(ports)),
      metrics_(metrics),
      logger_(logger),
      candidacy_(present(ports_.candidacy)) {
  candidacy_.setAlias(config_.alias);
  candidacy_.setEventHandler([this](const ElectorEvent& e) { onElectorEvent(e); });
}

Sidecar::~Sidecar() = default;

std::optional<std::string> Sidecar::writeInitialStatusFile() {
  if (!ports_.statusFile) return std::nullopt;
  return ports_.statusFile->writeNow(publish::leadershipJson(leadership(), config_.lease) + "\n");
}

void Sidecar::start() {
  if (ports_.podLabel) ports_.podLabel->set(false);  // until this replica leads
  candidacy_.start();
}

std::optional<std::string> Sidecar::unhealthyReason() const {
  const auto held = candidacy_.holdingWithoutRenewalFor();
  if (!held || *held < config_.candidate.timings.leaseDuration + config_.unhealthyMargin) {
    return std::nullopt;
  }
  return "holding the lease without a successful renewal for " + time::formatDuration(*held);
}

void Sidecar::release() {
  if (!ports_.command) {
    logger_.info("release requested: stepping aside",
                 {{"cooldown", time::formatDuration(config_.releaseCooldown)}});
    candidacy_.releaseFor(config_.releaseCooldown, nullptr);
    return;
  }
  if (stopping_ || releaseAfterCommand_) return;
  logger_.info("release requested: stopping the command first, then stepping aside",
               {{"cooldown", time::formatDuration(config_.releaseCooldown)}});
  stopCommandThen([this] { candidacy_.releaseFor(config_.releaseCooldown, nullptr); });
}

// Run mode: the Lease is let go (released, handed over) only once the command is gone.
void Sidecar::stopCommandThen(std::function<void()> letGo) {
  if (stopping_ || releaseAfterCommand_) return;
  releaseAfterCommand_ = true;
  std::weak_ptr<char> alive = alive_;
  ports_.command->stopForRelease([this, alive, letGo = std::move(letGo)] {
    if (alive.expired() || !releaseAfterCommand_) return;
    releaseAfterCommand_ = false;
    if (stopping_) return;  // the shutdown releases
    letGo();
  });
}

bool Sidecar::shutdown(std::function<void()> done) {
  if (stopping_) return false;
  stopping_ = true;
  shutdownDone_ = std::move(done);
  if (!ports_.command) {
    stopAndRelease();
    return true;
  }
  // Renewals go on while the command drains: the lease is still ours until it is gone.
  std::weak_ptr<char> alive = alive_;
  ports_.command->stopForShutdown([this, alive] {
    if (alive.expired()) return;
    stopAndRelease();
  });
  return true;
}

void Sidecar::stopAndRelease() {
  std::weak_ptr<char> alive = alive_;
  candidacy_.stop([this, alive] {
    if (alive.expired()) return;
    afterRelease();
  });
}

void Sidecar::afterRelease() {
  if (ports_.leadershipMayHaveChanged) ports_.leadershipMayHaveChanged();
  writeStatusFile();
  if (ports_.podLabel) ports_.podLabel->set(false);
  // Events, the label and the status file drain at once; whichever ends last finishes.
  auto waiting = std::make_shared<int>(1 + (ports_.podLabel ? 1 : 0) + (ports_.statusFile ? 1 : 0));
  std::weak_ptr<char> alive = alive_;
  auto oneDone = [this, alive, waiting] {
    if (alive.expired() || --*waiting != 0) return;
    if (auto done = std::move(shutdownDone_)) done();
  };
  ports_.events.drain(config_.drainBudget, oneDone);
  if (ports_.podLabel) ports_.podLabel->drain(config_.drainBudget, oneDone);
  if (ports_.statusFile) ports_.statusFile->flush(oneDone);
}

// Written on every elector event that changes the JSON and with leader=false on the way out.
// A failing write is logged when the failure starts and when it ends.
void Sidecar::writeStatusFile() {
  if (!ports_.statusFile) return;
  std::weak_ptr<char> alive = alive_;
  ports_.statusFile->write(
      publish::leadershipJson(leadership(), config_.lease) + "\n",
      [this, alive](const std::optional<std::string>& problem) {
        if (alive.expired()) return;
        if (problem.value_or("") == statusFileProblem_) return;
        if (problem) {
          logger_.error("cannot write the status file", {{"problem", *problem}});
        } else {
          logger_.info("status file written again", {{"path", ports_.statusFile->path}});
        }
        statusFileProblem_ = problem.value_or("");
      });
}

void Sidecar::onElectorEvent(const ElectorEvent& e) {
  fanOut(e);
  if (ports_.command) tellCommand(e);
}

// Run mode: after the log line, so that "became leader" comes before "command started".
void Sidecar::tellCommand(const ElectorEvent& e) {
  switch (e.kind) {
    case ElectorEvent::Kind::kAcquired:
    case ElectorEvent::Kind::kRenewed: {
      const auto l = leadership();
      if (l.leader && l.fencingToken && l.validUntilMono) {
        ports_.command->leading(*l.fencingToken, *l.validUntilMono);
      }
      return;
    }
    case ElectorEvent::Kind::kSteppedDown:
      return ports_.command->lost();
    case ElectorEvent::Kind::kHandoverRequested:
      return stopCommandThen([this] { candidacy_.handOver(nullptr); });
    default:
      return;
  }
}

void Sidecar::fanOut(const ElectorEvent& e) {
  log::Fields f{{"holder", e.holder}, {"detail", e.detail}};
  if (e.token) f.emplace_back("token", std::to_string(*e.token));
  switch (e.kind) {
    case ElectorEvent::Kind::kAcquired:
      metrics_.acquired();
      metrics_.leaderChanged();
      break;
    case ElectorEvent::Kind::kNewLeaderObserved:
      metrics_.leaderChanged();
      break;
    case ElectorEvent::Kind::kRenewed:
      metrics_.renewal(true, std::chrono::duration<double>(e.latency).count());
      break;
    case ElectorEvent::Kind::kRenewFailed:
      metrics_.renewal(false, 0);
      break;
    default:
      break;
  }
  // What the main container and the operator see. A failed renewal changes nothing visible
  // (the claim holds until the deadline, which has its own event).
  if (ports_.leadershipMayHaveChanged) ports_.leadershipMayHaveChanged();
  if (e.kind != ElectorEvent::Kind::kRenewFailed) writeStatusFile();
  if (e.kind == ElectorEvent::Kind::kAcquired || e.kind == ElectorEvent::Kind::kSteppedDown) {
    const bool leads = e.kind == ElectorEvent::Kind::kAcquired;
    ports_.events.record(identity() + (leads ? " became leader" : " stopped leading"));
    if (ports_.podLabel) ports_.podLabel->set(leads);
  }
  switch (e.kind) {
    case ElectorEvent::Kind::kAcquired:
      return logger_.info("became leader", f);
    case ElectorEvent::Kind::kSteppedDown:
      // Asked to (SIGTERM, POST /leader/release) is routine; anything else is worth a look.
      if (e.voluntary) return logger_.info("stopped leading", f);
      return logger_.warn("stopped leading", f);
    case ElectorEvent::Kind::kRenewFailed:
      return logger_.warn("renewal failed", f);
    case ElectorEvent::Kind::kNewLeaderObserved:
      return logger_.info("new leader observed", f);
    case ElectorEvent::Kind::kReleased:
      return logger_.info("released the lease", f);
    case ElectorEvent::Kind::kHandoverRequested:
      // Nothing acts for the leader in sidecar mode but the app, which hears leader=false at
      // once: hand over now. In run mode the command is stopped first (tellCommand).
      if (ports_.command) return logger_.info("handover requested: stopping the command first", f);
      logger_.info("handover requested", f);
      return candidacy_.handOver(nullptr);
    case ElectorEvent::Kind::kStoreFailed:
      return logger_.warn("store request failed", f);
    case ElectorEvent::Kind::kRenewed:
    case ElectorEvent::Kind::kObserved:
      return logger_.debug(election::toString(e.kind), f);
  }
}

}  // namespace leasehold::lock
