#include "kube/LeaseClient.h"

#include "kube/LeaseWatch.h"
#include "kube/RefusalHint.h"

namespace leasehold::kube {

using election::StoreResult;
using election::StoreStatus;

LeaseClient::LeaseClient(ApiTransport& api, time::Clock& clock, LeaseTarget target,
                         LeaseClientOptions options, std::function<double()> random01)
    : api_(api),
      clock_(clock),
      target_(std::move(target)),
      options_(options),
      random01_(std::move(random01)) {}

LeaseClient::~LeaseClient() = default;

std::string LeaseClient::collectionPath() const {
  return "/apis/coordination.k8s.io/v1/namespaces/" + target_.ns + "/leases";
}

std::string LeaseClient::objectPath() const {
  return collectionPath() + "/" + target_.name;
}

StoreResult LeaseClient::classify(const ApiResponse& r, const std::string& verb) {
  const bool isCreate = verb == "create";
  StoreResult out;
  out.httpCode = r.code;
  out.message = r.describe();
  // The server's text names the verb and the ServiceAccount; the hint names what to fix.
  const std::string hint = refusalHint(Connection::kLease, verb, r.code);
  if (!hint.empty()) out.message += " (" + hint + ")";
  if (r.retryAfter) out.retryAfter = *r.retryAfter;
  if (r.code == 0) {
    out.status = StoreStatus::kTransient;
  } else if (r.code == 404) {
    out.status = StoreStatus::kNotFound;
  } else if (r.code == 409) {
    const bool exists = r.status && r.status->reason == "AlreadyExists";
    out.status = (isCreate || exists) ? StoreStatus::kAlreadyExists : StoreStatus::kConflict;
  } else if (r.code == 429 || r.code >= 500) {
    out.status = StoreStatus::kTransient;
  } else {
    // 400, 401 (after a token re-read), 403, 415, 422: the same request will fail again until
    // somebody fixes RBAC, the token or the lease.
    out.status = StoreStatus::kFatal;
  }
  return out;
}

void LeaseClient::decodeInto(ApiResponse r, const std::string& verb, election::StoreCallback done) {
  if (!r.ok()) return done(classify(r, verb));
  election::LeaseRecord record;
  std::string error;
  if (!decodeLease(r.body, record, error)) {
    // The write may well have been applied: the election treats this like a lost answer.
    return done(StoreResult::error(StoreStatus::kTransient,
                                   std::to_string(r.code) + " with a malformed body: " + error));
  }
  done(StoreResult::ok(std::move(record)));
}

void LeaseClient::get(election::StoreCallback done) {
  std::weak_ptr<char> alive = alive_;
  api_.call({"get", "GET", objectPath(), "", "application/json", options_.requestDeadline},
            [this, alive, done = std::move(done)](ApiResponse r) mutable {
              if (alive.expired()) return;
              decodeInto(std::move(r), "get", std::move(done));
            });
}

void LeaseClient::create(const election::LeaseRecord& record, election::StoreCallback done) {
  std::weak_ptr<char> alive = alive_;
  api_.call({"create", "POST", collectionPath(), encodeLease(record, target_, true),
             "application/json", options_.requestDeadline},
            [this, alive, done = std::move(done)](ApiResponse r) mutable {
              if (alive.expired()) return;
              decodeInto(std::move(r), "create", std::move(done));
            });
}

void LeaseClient::update(const election::LeaseRecord& record, election::StoreCallback done) {
  std::weak_ptr<char> alive = alive_;
  api_.call({"update", "PUT", objectPath(), encodeLease(record, target_, false), "application/json",
             options_.requestDeadline},
            [this, alive, done = std::move(done)](ApiResponse r) mutable {
              if (alive.expired()) return;
              decodeInto(std::move(r), "update", std::move(done));
            });
}

void LeaseClient::watch(election::LeaseObserver* observer) {
  if (!observer) {
    watch_.reset();
    return;
  }
  watch_ = std::make_unique<LeaseWatch>(api_, clock_, *this, *observer, options_, random01_);
  watch_->start();
}

}  // namespace leasehold::kube
