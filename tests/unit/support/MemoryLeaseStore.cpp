#include "MemoryLeaseStore.h"

#include <string>

namespace leasehold::election {

// ---- backend -----------------------------------------------------------------------------

StoreResult MemoryLeaseBackend::get() const {
  if (!record_) return StoreResult::error(StoreStatus::kNotFound, "lease not found");
  return StoreResult::ok(*record_);
}

LeaseRecord MemoryLeaseBackend::stamp(LeaseRecord record) {
  record.resourceVersion = ResourceVersion{std::to_string(nextVersion_++)};
  return record;
}

void MemoryLeaseBackend::notify() {
  history_.push_back(*record_);
  // Listeners may subscribe or unsubscribe while being called.
  auto copy = listeners_;
  for (auto& [id, listener] : copy) {
    if (listeners_.count(id)) listener(record_);
  }
}

StoreResult MemoryLeaseBackend::create(const LeaseRecord& record) {
  if (record_) return StoreResult::error(StoreStatus::kAlreadyExists, "lease already exists");
  record_ = stamp(record);
  notify();
  return StoreResult::ok(*record_);
}

StoreResult MemoryLeaseBackend::update(const LeaseRecord& record) {
  if (!record_) return StoreResult::error(StoreStatus::kNotFound, "lease not found");
  if (record.resourceVersion != record_->resourceVersion) {
    return StoreResult::error(StoreStatus::kConflict, "the object has been modified");
  }
  if (record.sameSpec(*record_)) return StoreResult::ok(*record_);
  record_ = stamp(record);
  notify();
  return StoreResult::ok(*record_);
}

void MemoryLeaseBackend::put(LeaseRecord record) {
  record_ = stamp(std::move(record));
  notify();
}

void MemoryLeaseBackend::remove() {
  if (!record_) return;
  record_.reset();
  nextVersion_++;
  auto copy = listeners_;
  for (auto& [id, listener] : copy) {
    if (listeners_.count(id)) listener(std::nullopt);
  }
}

std::uint64_t MemoryLeaseBackend::subscribe(Listener listener) {
  const auto id = nextListener_++;
  listeners_.emplace(id, std::move(listener));
  return id;
}

void MemoryLeaseBackend::unsubscribe(std::uint64_t id) {
  listeners_.erase(id);
}

// ---- client handle -----------------------------------------------------------------------

// Runs callbacks at given instants on one clock, in (instant, submission) order.
class MemoryLeaseStore::Scheduler {
 public:
  explicit Scheduler(time::Clock& clock)
      : clock_(clock), timer_(clock.makeTimer([this] { run(); })) {}
  time::Clock& clock() { return clock_; }
  void at(time::MonoTime when, std::function<void()> fn) {
    queue_.emplace(std::make_pair(when, seq_++), std::move(fn));
    timer_->armAt(queue_.begin()->first.first);
  }

 private:
  void run() {
    while (!queue_.empty() && queue_.begin()->first.first <= clock_.now()) {
      auto fn = std::move(queue_.begin()->second);
      queue_.erase(queue_.begin());
      fn();
    }
    if (!queue_.empty()) timer_->armAt(queue_.begin()->first.first);
  }
  time::Clock& clock_;
  std::unique_ptr<time::Timer> timer_;
  std::uint64_t seq_ = 0;
  std::multimap<std::pair<time::MonoTime, std::uint64_t>, std::function<void()>> queue_;
};

MemoryLeaseStore::MemoryLeaseStore(MemoryLeaseBackend& backend, time::Clock& clientClock,
                                   time::Clock& networkClock)
    : backend_(backend),
      client_(std::make_unique<Scheduler>(clientClock)),
      network_(std::make_unique<Scheduler>(networkClock)) {
  subscription_ =
      backend_.subscribe([this](const std::optional<LeaseRecord>& r) { onBackendChange(r); });
}

MemoryLeaseStore::~MemoryLeaseStore() {
  backend_.unsubscribe(subscription_);
}

void MemoryLeaseStore::failNext(int n, StoreStatus status,
                                std::optional<time::Duration> retryAfter) {
  failures_ = n;
  failureStatus_ = status;
  failureRetryAfter_ = retryAfter;
}

void MemoryLeaseStore::perform(std::function<StoreResult()> op, bool isWrite, StoreCallback done) {
  auto& net = network_->clock();
  auto deliver = [this, done = std::move(done)](StoreResult r) mutable {
    client_->at(client_->clock().now(), [done = std::move(done), r = std::move(r)] { done(r); });
  };
  if (isWrite && writesRefused_) {
    auto r = StoreResult::error(StoreStatus::kFatal, "writes refused");
    network_->at(net.now() + latency_, [deliver, r]() mutable { deliver(r); });
    return;
  }
  if (failures_ > 0) {
    failures_--;
    auto r = StoreResult::error(failureStatus_, "injected failure");
    r.retryAfter = failureRetryAfter_;
    network_->at(net.now() + latency_, [deliver, r]() mutable { deliver(r); });
    return;
  }
  if (partitioned_) {
    network_->at(net.now() + requestTimeout_, [deliver]() mutable {
      deliver(StoreResult::error(StoreStatus::kTransient, "request timed out (partition)"));
    });
    return;
  }
  const bool lose = isWrite && loseResponses_ > 0;
  if (lose) loseResponses_--;
  network_->at(net.now() + latency_, [this, op = std::move(op), deliver, lose]() mutable {
    StoreResult r = op();
    if (lose) r = StoreResult::error(StoreStatus::kTransient, "connection reset (answer lost)");
    network_->at(network_->clock().now() + latency_, [deliver, r]() mutable { deliver(r); });
  });
}

void MemoryLeaseStore::get(StoreCallback done) {
  counters_.get++;
  perform([this] { return backend_.get(); }, false, std::move(done));
}

void MemoryLeaseStore::create(const LeaseRecord& record, StoreCallback done) {
  counters_.create++;
  perform([this, record] { return backend_.create(record); }, true, std::move(done));
}

void MemoryLeaseStore::update(const LeaseRecord& record, StoreCallback done) {
  counters_.update++;
  perform([this, record] { return backend_.update(record); }, true, std::move(done));
}

void MemoryLeaseStore::watch(LeaseObserver* observer) {
  observer_ = observer;
  if (!observer_) return;
  const bool healthy = watchHealthy_ && !partitioned_;
  client_->at(client_->clock().now(), [this, healthy] {
    if (observer_) observer_->onWatchStateChanged(healthy);
  });
}

void MemoryLeaseStore::onBackendChange(const std::optional<LeaseRecord>& record) {
  if (!observer_ || !watchHealthy_ || partitioned_) return;
  auto& net = network_->clock();
  // In order, like a watch stream.
  time::MonoTime when = net.now() + latency_;
  if (when < lastNotification_) when = lastNotification_;
  lastNotification_ = when;
  network_->at(when, [this, record] {
    client_->at(client_->clock().now(), [this, record] {
      if (observer_ && watchHealthy_ && !partitioned_) observer_->onLeaseObserved(record);
    });
  });
}

void MemoryLeaseStore::setPartitioned(bool partitioned) {
  if (partitioned_ == partitioned) return;
  partitioned_ = partitioned;
  if (watchHealthy_) announceWatchState(!partitioned);
}

void MemoryLeaseStore::setWatchHealthy(bool healthy) {
  if (watchHealthy_ == healthy) return;
  watchHealthy_ = healthy;
  if (!partitioned_) announceWatchState(healthy);
}

// Like a real watch: when it comes back it re-lists, so the observer sees the current state.
void MemoryLeaseStore::announceWatchState(bool healthy) {
  client_->at(client_->clock().now(), [this, healthy] {
    if (!observer_) return;
    observer_->onWatchStateChanged(healthy);
    if (healthy) observer_->onLeaseObserved(backend_.current());
  });
}

}  // namespace leasehold::election
