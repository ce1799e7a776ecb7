#include "kube/MembershipLease.h"

namespace leasehold::kube {

using election::StoreResult;
using election::StoreStatus;

MembershipLease::MembershipLease(time::Clock& clock, std::unique_ptr<LeaseClient> lease,
                                 ApiTransport& api, MembershipLeaseOptions options)
    : clock_(clock), lease_(std::move(lease)), api_(api), options_(std::move(options)) {
  timer_ = clock_.makeTimer([this] { write(); });
}

MembershipLease::~MembershipLease() = default;

void MembershipLease::start() {
  write();
}

void MembershipLease::write() {
  if (inflight_ || removing_) return;
  election::LeaseRecord rec = last_.value_or(election::LeaseRecord{});
  const auto wall = clock_.wallNow();
  rec.holderIdentity = options_.identity;
  rec.leaseDurationSeconds = static_cast<std::int32_t>(
      std::chrono::duration_cast<std::chrono::seconds>(options_.duration).count());
  rec.renewTime = wall;
  if (!rec.acquireTime || !last_) rec.acquireTime = wall;
  inflight_ = true;
  std::weak_ptr<char> alive = alive_;
  auto then = [this, alive](StoreResult r) {
    if (alive.expired()) return;
    inflight_ = false;
    onAnswer(std::move(r));
  };
  if (last_) {
    lease_->update(rec, std::move(then));
  } else {
    lease_->create(rec, std::move(then));
  }
}

void MembershipLease::onAnswer(StoreResult r) {
  if (removing_) return;
  switch (r.status) {
    case StoreStatus::kOk:
      last_ = std::move(r.record);
      if (!problem_.empty() && options_.onProblem) options_.onProblem("membership Lease written");
      problem_.clear();
      timer_->armAt(clock_.now() + options_.period);
      return;
    case StoreStatus::kNotFound:
      last_.reset();
      return write();
    case StoreStatus::kConflict:
    case StoreStatus::kAlreadyExists: {
      // Our own earlier write, or a restart of the same identity: read it and write again.
      inflight_ = true;
      std::weak_ptr<char> alive = alive_;
      lease_->get([this, alive](StoreResult g) {
        if (alive.expired()) return;
        inflight_ = false;
        if (removing_) return;
        if (g.status == StoreStatus::kOk) {
          last_ = std::move(g.record);
          return write();
        }
        if (g.status == StoreStatus::kNotFound) {
          last_.reset();
          return write();
        }
        retrySoon(g.message);
      });
      return;
    }
    default:
      return retrySoon(r.message);
  }
}

void MembershipLease::retrySoon(const std::string& why) {
  if (why != problem_ && options_.onProblem) {
    options_.onProblem("cannot write the membership Lease: " + why);
  }
  problem_ = why;
  timer_->armAt(clock_.now() + std::min<time::Duration>(options_.period, std::chrono::seconds(1)));
}

void MembershipLease::remove(std::function<void()> done) {
  removing_ = true;
  timer_->disarm();
  std::weak_ptr<char> alive = alive_;
  api_.call({"delete", "DELETE", lease_->objectPath(), "", "application/json",
             std::chrono::milliseconds(2000)},
            [alive, done = std::move(done)](ApiResponse) {
              if (alive.expired()) return;
              if (done) done();
            });
}

}  // namespace leasehold::kube
