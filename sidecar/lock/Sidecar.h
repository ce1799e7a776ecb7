#pragma once
// One lock's sidecar, whatever store keeps the lock: the policy above the election, written
// once for every store. Its candidacy (election::Candidacy: kube::LeaseElection on a Kubernetes
// Lease, etcd::EtcdCampaign in etcd) comes in through a port; the Sidecar decides how each of its
// events fans out (metrics, the status API's stream, the status file, Kubernetes Events, the pod
// label, the log), the /healthz rule, POST /leader/release and the shutdown sequence. It runs on
// one event loop and does no I/O of its own: every collaborator comes in through a port, so a unit
// test drives it on FakeClock with MemoryLeaseStore and fakes, and shard mode can run N of them on
// one loop.
//
// Order on every elector event: metrics, stream clients, status file (not on a failed renewal:
// nothing visible changed), then on acquiring/stepping down an Event and the pod label, then
// the log line.
//
// Run mode (ports.command, leasehold run): the supervised command hears of every acquisition
// and renewal (the term's token and until when its claim holds) and of every step-down. It
// is stopped before the Lease is let go: POST /leader/release, a handover request and
// shutdown() first ask the command port to stop the command and keep renewing meanwhile (the
// lease is still ours); only once its process group is gone does the release (or the
// handover) happen.
//
// Shutdown (shutdown()): stop claiming and release the lease (Candidacy::stop), tell the stream,
// write the status file with leader=false, set the pod label to false, let queued Events and
// the label go out within drainBudget (both at once), wait for the status file to land, then
// run done. A second shutdown() while one is running returns false: main exits at once.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "election/Candidacy.h"
#include "log/Logger.h"
#include "publish/LeadershipJson.h"
#include "publish/Metrics.h"
#include "time/Time.h"

namespace leasehold::lock {

// Kubernetes Events about the lock (kube::EventRecorder in production, naming the Lease as
// kube::LeaseElection last saw it). Fire and forget.
struct EventsPort {
  std::function<void(std::string message)> record;
  // done runs once the queue is empty or after budget.
  std::function<void(time::Duration budget, std::function<void()> done)> drain;
};

// --pod-label (kube::PodLabeler in production): only the latest value matters.
struct PodLabelPort {
  std::function<void(bool leader)> set;
  std::function<void(time::Duration budget, std::function<void()> done)> drain;
};

// --status-file (publish::StatusFile, written off the loop by publish::StatusFileWriter).
struct StatusFilePort {
  std::string path;  // for the log
  // At start, on the loop: a bad path fails the start, not the first election.
  std::function<std::optional<std::string>(const std::string& content)> writeNow;
  // Replaces the content; a later write may supersede this one before it lands (its outcome
  // then never runs). outcome runs on the loop: nullopt on success, else why not.
  std::function<void(std::string content,
                     std::function<void(const std::optional<std::string>& problem)> outcome)>
      write;
  // done runs on the loop once the last content written has landed or failed.
  std::function<void(std::function<void()> done)> flush;
};

// Run mode's supervised command (lock::RunMode on supervise::Supervisor in production).
struct CommandPort {
  // This replica leads term `token`, its claim valid until validUntil (acquired, renewed).
  std::function<void(std::int64_t token, time::MonoTime validUntil)> leading;
  // It stopped claiming (deadline passed, another holder, released, shutting down).
  std::function<void()> lost;
  // POST /leader/release: stop the command; ready runs once its process group is gone.
  std::function<void(std::function<void()> ready)> stopForRelease;
  // shutdown(): drain the command; ready runs once its process group is gone.
  std::function<void(std::function<void()> ready)> stopForShutdown;
};

struct SidecarConfig {
  // The candidate: its identity and timings (the candidacy in the ports was built with them,
  // and with whatever its store adds).
  election::CandidateConfig candidate;
  publish::LeaseName lease;
  time::Duration releaseCooldown{};
  // How long queued Events and the pod label may take on the way out.
  time::Duration drainBudget = std::chrono::seconds(2);
  // /healthz fails once the lease is held this long past D without a successful renewal.
  time::Duration unhealthyMargin = std::chrono::seconds(20);
  // Another name this replica answers to in a handover request (its pod name); may be empty.
  std::string alias{};
};

struct SidecarPorts {
  // This replica's candidacy for the lock (kube::LeaseElection on a kube::LeaseClient, or
  // etcd::EtcdCampaign).
  std::unique_ptr<election::Candidacy> candidacy;
  EventsPort events;
  std::optional<PodLabelPort> podLabel;      // nullopt: no --pod-label
  std::optional<StatusFilePort> statusFile;  // nullopt: no --status-file
  // Called on every elector event (StatusServer::leadershipMayHaveChanged).
  std::function<void()> leadershipMayHaveChanged;
  std::optional<CommandPort> command;  // nullopt: sidecar mode
};

class Sidecar {
 public:
  // Throws std::invalid_argument without ports.candidacy.
  Sidecar(SidecarConfig config, SidecarPorts ports, publish::Metrics& metrics,
          const log::Logger& logger);
  ~Sidecar();
  Sidecar(const Sidecar&) = delete;
  Sidecar& operator=(const Sidecar&) = delete;

  // The start-up write of the status file (leader=false): why not, if it failed.
  std::optional<std::string> writeInitialStatusFile();
  // Sets the pod label to false (until this replica leads) and starts competing.
  void start();

  election::Leadership leadership() const { return candidacy_.leadership(); }
  // /healthz: nullopt when healthy, else why not (the lease held for D + margin without a
  // successful renewal blocks everybody while this process no longer claims it).
  std::optional<std::string> unhealthyReason() const;
  // POST /leader/release: steps aside for the release cooldown (in run mode once the command
  // has stopped).
  void release();
  // The shutdown sequence; done runs once it is complete. false (and nothing else happens)
  // when a shutdown is already running.
  bool shutdown(std::function<void()> done);
  bool shuttingDown() const { return stopping_; }

  const std::string& identity() const { return config_.candidate.identity.value; }
  // Shard mode (shard/ShardMode): acquire only while `eligible` says yes; reconsider() when it may
  // have turned to yes (Candidacy::setEligibility).
  void setEligibility(std::function<bool()> eligible) {
    candidacy_.setEligibility(std::move(eligible));
  }
  void reconsider() { candidacy_.reconsider(); }

 private:
  void onElectorEvent(const election::ElectorEvent& e);
  void fanOut(const election::ElectorEvent& e);
  void tellCommand(const election::ElectorEvent& e);
  void stopAndRelease();
  void stopCommandThen(std::function<void()> letGo);
  void writeStatusFile();
  void afterRelease();

  SidecarConfig config_;
  SidecarPorts ports_;
  publish::Metrics& metrics_;
  const log::Logger& logger_;
  election::Candidacy& candidacy_;  // *ports_.candidacy
  std::string statusFileProblem_;
  bool stopping_ = false;
  bool releaseAfterCommand_ = false;  // run mode: a release waits for the command to stop
  std::function<void()> shutdownDone_;
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace leasehold::lock
