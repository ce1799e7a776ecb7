#pragma once
// election::LeaseStore for one shard Lease: reads and writes go through its own LeaseClient
// (compare-and-swap, the group's label on every write); change notifications come from the
// group's one watch (LeaseGroupWatch), handed in by the caller through deliver() and
// setWatchHealthy(). A shard's Elector thus sends no request while it follows.
#include <memory>
#include <optional>

#include "election/lease/LeaseStore.h"

namespace leasehold::kube {

class ShardLeaseStore : public election::LeaseStore {
 public:
  explicit ShardLeaseStore(std::unique_ptr<election::LeaseStore> writes)
      : writes_(std::move(writes)) {}

  void get(election::StoreCallback done) override { writes_->get(std::move(done)); }
  void create(const election::LeaseRecord& record, election::StoreCallback done) override {
    writes_->create(record, std::move(done));
  }
  void update(const election::LeaseRecord& record, election::StoreCallback done) override {
    writes_->update(record, std::move(done));
  }
  // The observer hears the watch's state and the last record at once (if the group was listed).
  void watch(election::LeaseObserver* observer) override;

  // The group watch saw this Lease change (nullopt: deleted or not in the list).
  void deliver(const std::optional<election::LeaseRecord>& record);
  void setWatchHealthy(bool healthy);

 private:
  std::unique_ptr<election::LeaseStore> writes_;
  election::LeaseObserver* observer_ = nullptr;
  bool known_ = false;
  std::optional<election::LeaseRecord> last_;
  bool healthy_ = false;
};

}  // namespace leasehold::kube
