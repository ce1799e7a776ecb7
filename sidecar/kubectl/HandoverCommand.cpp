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

HandoverCommand::HandoverCommand(CommandContext context) : ctx_(std::move(context)) {}

std::string HandoverCommand::patchBody(const std::string& to) {
  nlohmann::json patch;
  patch["metadata"]["annotations"][kube::kPreferredHolderAnnotation] = to;
  return patch.dump();
}

bool HandoverCommand::heldBy(const election::LeaseRecord& lease, const std::string& to) {
  return !lease.holderIdentity.empty() && (lease.holderIdentity == to || lease.holderPod == to);
}

std::string HandoverCommand::leaseName() const {
  return "lease " + ctx_.ns + "/" + ctx_.options.name;
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
      "/apis/coordination.k8s.io/v1/namespaces/" + ctx_.ns + "/leases/" + ctx_.options.name;
  // Read first: an unknown Lease must not be created by the patch (it is not: PATCH of a
  // missing object is a 404), and a request for the current holder needs no handover.
  ctx_.api.call({"get", "GET", path, "", "application/json", ctx_.options.requestTimeout},
                [this](kube::ApiResponse r) {
                  if (!r.ok()) {
                    ctx_.console.err(FailureMessage::describe(
                        r, {"get", ctx_.ns, ctx_.options.name}, ctx_.server));
                    return finish(1);
                  }
                  election::LeaseRecord lease;
                  std::string error;
                  if (!kube::decodeLease(r.body, lease, error)) {
                    ctx_.console.err(leaseName() + ": " + error);
                    return finish(1);
                  }
                  if (heldBy(lease, ctx_.options.to)) {
                    ctx_.console.out(leaseName() + " is already held by " + holderText(lease) +
                                     " (token " + std::to_string(lease.leaseTransitions) +
                                     "): nothing to do\n");
                    return finish(0);
                  }
                  last_ = lease;
                  patch();
                });
}

void HandoverCommand::patch() {
  const std::string path =
      "/apis/coordination.k8s.io/v1/namespaces/" + ctx_.ns + "/leases/" + ctx_.options.name;
  requestedAt_ = ctx_.clock.now();
  if (ctx_.options.wait) {
    timeout_ = ctx_.clock.makeTimer([this] {
      const std::string holder = last_ ? holderText(*last_) : "unknown";
      const bool pending = last_ && !last_->preferredHolder.empty();
      ctx_.console.err("timed out after " + seconds(*ctx_.options.timeout) + " waiting for \"" +
                       ctx_.options.to + "\" to hold " + leaseName() + " (holder now: " + holder +
                       (pending ? "; the request is still on the Lease: does a replica with that "
                                  "identity or pod name run?"
                                : "") +
                       ")");
      finish(1);
    });
    timeout_->armAt(requestedAt_ + *ctx_.options.timeout);
  }
  ctx_.api.call({"patch", "PATCH", path, patchBody(ctx_.options.to), "application/merge-patch+json",
                 ctx_.options.requestTimeout},
                [this](kube::ApiResponse r) {
                  if (finished_) return;
                  if (!r.ok()) {
                    ctx_.console.err(FailureMessage::describe(
                        r, {"patch", ctx_.ns, ctx_.options.name}, ctx_.server));
                    return finish(1);
                  }
                  election::LeaseRecord lease;
                  std::string error;
                  if (!kube::decodeLease(r.body, lease, error)) {
                    ctx_.console.err(leaseName() + ": the patch's answer: " + error);
                    return finish(1);
                  }
                  ctx_.console.out("handover requested: " + leaseName() + " from " +
                                   holderText(*last_) + " to " + ctx_.options.to + "\n");
                  last_ = lease;
                  if (!ctx_.options.wait) return finish(0);
                  if (heldBy(lease, ctx_.options.to)) {
                    ctx_.console.out(leaseName() + " held by " + holderText(lease) + " (token " +
                                     std::to_string(lease.leaseTransitions) + ") after " +
                                     seconds(ctx_.clock.now() - requestedAt_) + "\n");
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
    if (!heldBy(lease, ctx_.options.to)) return;
    ctx_.console.out(leaseName() + " held by " + holderText(lease) + " (token " +
                     std::to_string(lease.leaseTransitions) + ") after " +
                     seconds(ctx_.clock.now() - requestedAt_) + "\n");
    finish(0);
  };
  cb.onDeleted = [this] {
    ctx_.console.err(leaseName() + " was deleted while waiting for the handover");
    finish(1);
  };
  cb.onFailure = [this](const std::string& line) {
    ctx_.console.err(line);
    finish(1);
  };
  follower_ = ctx_.followLease(std::move(cb));
  follower_->startFrom(resourceVersion);
}

}  // namespace leasehold::kubectl
