#include "kubectl/HandoverCommand.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "kube/LeaseCodec.h"
#include "kubectl/FailureMessage.h"

namespace leasehold::kubectl {
namespace {

std::string seconds(time::Duration d) {
  char buf[32];
  std::snprintf(
      buf, sizeof buf, "%.3fs",
      static_cast<double>(std::chrono::duration_cast<std::chrono::microseconds>(d).count()) / 1e6);
  return buf;
}

std::string holderText(const election::LeaseRecord& l) {
  if (l.holderIdentity.empty()) return "nobody";
  if (l.holderPod.empty() || l.holderPod == l.holderIdentity) return l.holderIdentity;
  return l.holderIdentity + " (pod " + l.holderPod + ")";
}

}  // namespace

HandoverCommand::HandoverCommand(kube::ApiTransport& api, time::Clock& clock,
                                 const PluginOptions& options, std::string ns, std::string server,
                                 Console console)
    : api_(api),
      clock_(clock),
      options_(options),
      ns_(std::move(ns)),
      server_(std::move(server)),
      console_(std::move(console)) {}

std::string HandoverCommand::patchBody(const std::string& to) {
  nlohmann::json patch;
  patch["metadata"]["annotations"][kube::kPreferredHolderAnnotation] = to;
  return patch.dump();
}

bool HandoverCommand::heldBy(const election::LeaseRecord& lease, const std::string& to) {
  return !lease.holderIdentity.empty() && (lease.holderIdentity == to || lease.holderPod == to);
}

std::string HandoverCommand::leaseName() const {
  return "lease " + ns_ + "/" + options_.name;
}

void HandoverCommand::finish(int code) {
  if (finished_) return;
  finished_ = true;
  if (follower_) follower_->stop();
  timeout_.reset();
  done_(code);
}

void HandoverCommand::run(Done done) {
  done_ = std::move(done);
  const std::string path =
      "/apis/coordination.k8s.io/v1/namespaces/" + ns_ + "/leases/" + options_.name;
  // Read first: an unknown Lease must not be created by the patch (it is not: PATCH of a
  // missing object is a 404), and a request for the current holder needs no handover.
  api_.call({"get", "GET", path, "", "application/json", options_.requestTimeout},
            [this](kube::ApiResponse r) {
              if (!r.ok()) {
                console_.err(FailureMessage::describe(r, {"get", ns_, options_.name}, server_));
                return finish(1);
              }
              election::LeaseRecord lease;
              std::string error;
              if (!kube::decodeLease(r.body, lease, error)) {
                console_.err(leaseName() + ": " + error);
                return finish(1);
              }
              if (heldBy(lease, options_.to)) {
                console_.out(leaseName() + " is already held by " + holderText(lease) + " (token " +
                             std::to_string(lease.leaseTransitions) + "): nothing to do\n");
                return finish(0);
              }
              last_ = lease;
              patch();
            });
}

void HandoverCommand::patch() {
  const std::string path =
      "/apis/coordination.k8s.io/v1/namespaces/" + ns_ + "/leases/" + options_.name;
  requestedAt_ = clock_.now();
  if (options_.wait) {
    timeout_ = clock_.makeTimer([this] {
      const std::string holder = last_ ? holderText(*last_) : "unknown";
      const bool pending = last_ && !last_->preferredHolder.empty();
      console_.err("timed out after " + seconds(*options_.timeout) + " waiting for \"" +
                   options_.to + "\" to hold " + leaseName() + " (holder now: " + holder +
                   (pending ? "; the request is still on the Lease: does a replica with that "
                              "identity or pod name run?"
                            : "") +
                   ")");
      finish(1);
    });
    timeout_->armAt(requestedAt_ + *options_.timeout);
  }
  api_.call({"patch", "PATCH", path, patchBody(options_.to), "application/merge-patch+json",
             options_.requestTimeout},
            [this](kube::ApiResponse r) {
              if (finished_) return;
              if (!r.ok()) {
                console_.err(FailureMessage::describe(r, {"patch", ns_, options_.name}, server_));
                return finish(1);
              }
              election::LeaseRecord lease;
              std::string error;
              if (!kube::decodeLease(r.body, lease, error)) {
                console_.err(leaseName() + ": the patch's answer: " + error);
                return finish(1);
              }
              console_.out("handover requested: " + leaseName() + " from " + holderText(*last_) +
                           " to " + options_.to + "\n");
              last_ = lease;
              if (!options_.wait) return finish(0);
              if (heldBy(lease, options_.to)) {
                console_.out(leaseName() + " held by " + holderText(lease) + " (token " +
                             std::to_string(lease.leaseTransitions) + ") after " +
                             seconds(clock_.now() - requestedAt_) + "\n");
                return finish(0);
              }
              waitFrom(lease.resourceVersion.value);
            });
}

void HandoverCommand::waitFrom(const std::string& resourceVersion) {
  LeaseFollower::Callbacks cb;
  cb.onLease = [this](const election::LeaseRecord& lease) {
    if (finished_) return;
    last_ = lease;
    if (!heldBy(lease, options_.to)) return;
    console_.out(leaseName() + " held by " + holderText(lease) + " (token " +
                 std::to_string(lease.leaseTransitions) + ") after " +
                 seconds(clock_.now() - requestedAt_) + "\n");
    finish(0);
  };
  cb.onDeleted = [this] {
    console_.err(leaseName() + " was deleted while waiting for the handover");
    finish(1);
  };
  cb.onFailure = [this](const std::string& line) {
    console_.err(line);
    finish(1);
  };
  follower_ = std::make_unique<LeaseFollower>(api_, clock_, server_, ns_, options_.name,
                                              options_.requestTimeout, std::move(cb));
  follower_->startFrom(resourceVersion);
}

}  // namespace leasehold::kubectl
