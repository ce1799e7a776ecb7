#pragma once
// An in-memory Lease for tests and the offline demo: MemoryLeaseBackend plays the API server
// (one stored record, resourceVersions, change notifications); each MemoryLeaseStore is one
// client's connection to it, with its own latency and fault hooks.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "election/lease/LeaseStore.h"
#include "time/Clock.h"

namespace leasehold::election {

class MemoryLeaseBackend {
 public:
  using Listener = std::function<void(const std::optional<LeaseRecord>&)>;

  std::optional<LeaseRecord> current() const { return record_; }
  StoreResult get() const;
  StoreResult create(const LeaseRecord& record);
  // Compare-and-swap on resourceVersion. A write that changes nothing keeps the
  // resourceVersion and notifies nobody, as kube-apiserver does.
  StoreResult update(const LeaseRecord& record);
  // Out-of-band changes (kubectl edit / delete), notified like any other.
  void put(LeaseRecord record);
  void remove();

  std::uint64_t subscribe(Listener listener);
  void unsubscribe(std::uint64_t id);
  // Every record the backend stored, in order: what a fenced store downstream would see.
  const std::vector<LeaseRecord>& history() const { return history_; }

 private:
  LeaseRecord stamp(LeaseRecord record);
  void notify();

  std::optional<LeaseRecord> record_;
  std::uint64_t nextVersion_ = 1;
  std::uint64_t nextListener_ = 1;
  std::map<std::uint64_t, Listener> listeners_;
  std::vector<LeaseRecord> history_;
};

class MemoryLeaseStore : public LeaseStore {
 public:
  // clientClock delivers answers and notifications (a paused process gets them late);
  // networkClock times the trip to the backend (the server keeps working while the client is
  // paused). Both may be the same clock.
  MemoryLeaseStore(MemoryLeaseBackend& backend, time::Clock& clientClock,
                   time::Clock& networkClock);
  MemoryLeaseStore(MemoryLeaseBackend& backend, time::Clock& clock)
      : MemoryLeaseStore(backend, clock, clock) {}
  ~MemoryLeaseStore() override;

  void get(StoreCallback done) override;
  void create(const LeaseRecord& record, StoreCallback done) override;
  void update(const LeaseRecord& record, StoreCallback done) override;
  void watch(LeaseObserver* observer) override;

  // Fault hooks.
  // The next n requests fail with `status` without reaching the backend.
  void failNext(int n, StoreStatus status = StoreStatus::kTransient,
                std::optional<time::Duration> retryAfter = std::nullopt);
  // While on, every write is refused (kFatal, "writes refused"), reads answered: a grant with
  // get but not update.
  void setWritesRefused(bool refused) { writesRefused_ = refused; }
  // The next n writes are applied, but the client is told kTransient (the answer was lost).
  void loseNextResponses(int n) { loseResponses_ += n; }
  // One-way latency: the request reaches the backend after it, the answer returns after it.
  void setLatency(time::Duration oneWay) { latency_ = oneWay; }
  // Requests reach nothing and time out after requestTimeout; notifications stop.
  void setPartitioned(bool partitioned);
  void setRequestTimeout(time::Duration d) { requestTimeout_ = d; }
  // false: the watch is broken or denied (the observer is told and should poll).
  void setWatchHealthy(bool healthy);

  struct Counters {
    int get = 0, create = 0, update = 0;
    int total() const { return get + create + update; }
  };
  const Counters& counters() const { return counters_; }

 private:
  class Scheduler;
  void perform(std::function<StoreResult()> op, bool isWrite, StoreCallback done);
  void onBackendChange(const std::optional<LeaseRecord>& record);
  void announceWatchState(bool healthy);

  MemoryLeaseBackend& backend_;
  bool writesRefused_ = false;
  std::unique_ptr<Scheduler> client_;
  std::unique_ptr<Scheduler> network_;
  std::uint64_t subscription_ = 0;
  LeaseObserver* observer_ = nullptr;
  time::Duration latency_{};
  time::Duration requestTimeout_ = std::chrono::seconds(5);
  int failures_ = 0;
  StoreStatus failureStatus_ = StoreStatus::kTransient;
  std::optional<time::Duration> failureRetryAfter_;
  int loseResponses_ = 0;
  bool partitioned_ = false;
  bool watchHealthy_ = true;
  time::MonoTime lastNotification_{};
  Counters counters_;
};

}  // namespace leasehold::election
