#include "kube/LastSeenLeaseStore.h"

namespace leasehold::kube {

LastSeenLeaseStore::~LastSeenLeaseStore() {
  if (observer_) inner_.watch(nullptr);
}

election::StoreCallback LastSeenLeaseStore::remembering(election::StoreCallback done) {
  std::weak_ptr<char> alive = alive_;
  return [this, alive, done = std::move(done)](election::StoreResult r) {
    if (!alive.expired()) {
      if (r.status == election::StoreStatus::kOk && r.record) last_ = r.record;
      if (r.status == election::StoreStatus::kNotFound) last_.reset();
    }
    done(std::move(r));
  };
}

void LastSeenLeaseStore::get(election::StoreCallback done) {
  inner_.get(remembering(std::move(done)));
}

void LastSeenLeaseStore::create(const election::LeaseRecord& record, election::StoreCallback done) {
  inner_.create(record, remembering(std::move(done)));
}

void LastSeenLeaseStore::update(const election::LeaseRecord& record, election::StoreCallback done) {
  inner_.update(record, remembering(std::move(done)));
}

void LastSeenLeaseStore::watch(election::LeaseObserver* observer) {
  observer_ = observer;
  inner_.watch(observer ? this : nullptr);
}

void LastSeenLeaseStore::onLeaseObserved(const std::optional<election::LeaseRecord>& record) {
  last_ = record;
  if (observer_) observer_->onLeaseObserved(record);
}

void LastSeenLeaseStore::onWatchStateChanged(bool healthy) {
  if (observer_) observer_->onWatchStateChanged(healthy);
}

}  // namespace leasehold::kube
