#include "kube/ShardLeaseStore.h"

namespace leasehold::kube {

void ShardLeaseStore::watch(election::LeaseObserver* observer) {
  observer_ = observer;
  if (!observer_) return;
  if (healthy_) observer_->onWatchStateChanged(true);
  if (known_ && observer_) observer_->onLeaseObserved(last_);
}

void ShardLeaseStore::deliver(const std::optional<election::LeaseRecord>& record) {
  known_ = true;
  last_ = record;
  if (observer_) observer_->onLeaseObserved(record);
}

void ShardLeaseStore::setWatchHealthy(bool healthy) {
  if (healthy == healthy_) return;
  healthy_ = healthy;
  if (observer_) observer_->onWatchStateChanged(healthy);
}

}  // namespace leasehold::kube
