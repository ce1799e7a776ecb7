#pragma once
// The compare-and-swap record the Elector talks to (cf. client-go's resourcelock.Interface):
// Kubernetes' Lease (kube/LeaseClient) and the in-memory one for tests (MemoryLeaseStore)
// implement it. It is the Lease election's own interface, not the store boundary: a store
// implements election::Candidacy (election/Candidacy.h), as etcd/EtcdCampaign does without it.
#include <functional>
#include <optional>
#include <string>

#include "election/lease/LeaseRecord.h"

namespace leasehold::election {

enum class StoreStatus {
  kOk,
  kNotFound,       // 404: no such Lease
  kConflict,       // 409 on update: the resourceVersion moved, somebody else wrote
  kAlreadyExists,  // 409 on create
  kTransient,      // timeouts, 429, 5xx, dropped connections: the write may or may not be applied
  kFatal,          // 401/403/422-like: retrying the same request will not help by itself
};

const char* toString(StoreStatus s);

struct StoreResult {
  StoreStatus status = StoreStatus::kOk;
  std::optional<LeaseRecord> record;  // set when status is kOk
  std::string message;                // for logs; never contains credentials
  std::optional<time::Duration> retryAfter;
  int httpCode = 0;  // 0 when there was no HTTP answer

  static StoreResult ok(LeaseRecord r) {
    StoreResult s;
    s.record = std::move(r);
    return s;
  }
  static StoreResult error(StoreStatus st, std::string msg) {
    StoreResult s;
    s.status = st;
    s.message = std::move(msg);
    return s;
  }
};

using StoreCallback = std::function<void(StoreResult)>;

// Change notifications (a Kubernetes watch). A notification carries the record as it now is, or
// nullopt when the Lease was deleted.
class LeaseObserver {
 public:
  virtual ~LeaseObserver() = default;
  virtual void onLeaseObserved(const std::optional<LeaseRecord>& record) = 0;
  // false: notifications may be missed (watch denied or broken); the observer should poll.
  virtual void onWatchStateChanged(bool healthy) = 0;
};

// Every call completes exactly once, asynchronously (never from inside the call), on the event
// loop, within the implementation's request deadline.
class LeaseStore {
 public:
  virtual ~LeaseStore() = default;
  virtual void get(StoreCallback done) = 0;
  virtual void create(const LeaseRecord& record, StoreCallback done) = 0;
  // Compare-and-swap: succeeds only if the stored resourceVersion equals record.resourceVersion.
  virtual void update(const LeaseRecord& record, StoreCallback done) = 0;
  // Starts delivering change notifications to observer (nullptr stops them).
  virtual void watch(LeaseObserver* observer) = 0;
};

}  // namespace leasehold::election
