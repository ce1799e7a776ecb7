#pragma once
// A LeaseStore in front of another that remembers the last Lease record that went through it
// (answers to get/create/update and watch notifications), in the order the Elector sees them.
// The EventRecorder needs the Lease's uid and resourceVersion for involvedObject; the Elector
// keeps its record private, and a GET per event would cost a request and could race.
#include <memory>
#include <optional>

#include "election/lease/LeaseStore.h"

namespace leasehold::kube {

class LastSeenLeaseStore : public election::LeaseStore, private election::LeaseObserver {
 public:
  explicit LastSeenLeaseStore(election::LeaseStore& inner) : inner_(inner) {}
  ~LastSeenLeaseStore() override;

  void get(election::StoreCallback done) override;
  void create(const election::LeaseRecord& record, election::StoreCallback done) override;
  void update(const election::LeaseRecord& record, election::StoreCallback done) override;
  void watch(election::LeaseObserver* observer) override;

  // The most recent record seen; nullopt before the first or after the Lease was deleted.
  const std::optional<election::LeaseRecord>& last() const { return last_; }

 private:
  void onLeaseObserved(const std::optional<election::LeaseRecord>& record) override;
  void onWatchStateChanged(bool healthy) override;
  election::StoreCallback remembering(election::StoreCallback done);

  election::LeaseStore& inner_;
  election::LeaseObserver* observer_ = nullptr;
  std::optional<election::LeaseRecord> last_;
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace leasehold::kube
