#include "kube/LeaseShardGroup.h"

#include "kube/LeaseClient.h"
#include "kube/LeaseElection.h"
#include "kube/LeaseLockName.h"

namespace leasehold::kube {

namespace {
std::vector<std::pair<std::string, std::string>> groupLabels(const std::string& group) {
  return {{kShardGroupLabel, group}};
}
}  // namespace

LeaseShardGroup::LeaseShardGroup(time::Clock& clock, LeaseShardGroupConfig config,
                                 ApiTransport& api, const log::Logger& logger,
                                 std::function<double()> random01)
    : clock_(clock),
      config_(std::move(config)),
      api_(api),
      logger_(logger),
      random01_(std::move(random01)),
      view_(GroupLayout{config_.group, config_.shards}, config_.identity,
            config_.timings.leaseDuration),
      stores_(config_.shards, nullptr) {
  MembershipLeaseOptions mo;
  mo.identity = config_.identity;
  mo.duration = config_.timings.leaseDuration;
  // Three writes per duration: one lost write does not make the others drop this member.
  mo.period =
      std::max<time::Duration>(config_.timings.leaseDuration / 3, config_.timings.retryPeriod);
  mo.onProblem = [this](const std::string& what) { logger_.warn(what); };
  membership_ = std::make_unique<MembershipLease>(
      clock_,
      std::make_unique<LeaseClient>(
          api, clock_,
          LeaseTarget{view_.layout().memberLease(config_.identity), config_.ns, config_.podName,
                      config_.podIp, groupLabels(config_.group)},
          leaseOptions(), random01_),
      api, mo);

  LeaseGroupWatchOptions wo;
  wo.ns = config_.ns;
  wo.labelSelector = std::string(kShardGroupLabel) + "=" + config_.group;
  wo.requestDeadline = config_.requestDeadline;
  wo.watchTimeoutSeconds = config_.watchTimeoutSeconds;
  wo.onProblem = [this](const std::string& what) { logger_.warn(what); };
  watch_ = std::make_unique<LeaseGroupWatch>(api, clock_, static_cast<LeaseGroupObserver&>(*this),
                                             wo, random01_);
}

LeaseShardGroup::~LeaseShardGroup() = default;

LeaseClientOptions LeaseShardGroup::leaseOptions() const {
  LeaseClientOptions options;
  options.requestDeadline = config_.requestDeadline;
  return options;
}

election::LockName LeaseShardGroup::shardName(std::size_t shard) const {
  return leaseLockName(config_.ns, shardLock(shard));
}

std::string LeaseShardGroup::shardLock(std::size_t shard) const {
  return view_.layout().shardLease(shard);
}

std::unique_ptr<election::Candidacy> LeaseShardGroup::shardCandidacy(std::size_t shard) {
  auto writes =
      std::make_unique<LeaseClient>(api_, clock_,
                                    LeaseTarget{shardLock(shard), config_.ns, config_.podName,
                                                config_.podIp, groupLabels(config_.group)},
                                    leaseOptions(), random01_);
  auto store = std::make_unique<ShardLeaseStore>(std::move(writes));
  stores_.at(shard) = store.get();
  election::ElectorConfig elector{election::Identity{config_.identity}, config_.timings,
                                  election::FollowerMode::kWatch};
  return std::make_unique<LeaseElection>(clock_, std::move(store), elector, random01_);
}

void LeaseShardGroup::start(election::ShardGroupObserver& observer) {
  observer_ = &observer;
  membership_->start();
  watch_->start();
}

// ---- the group watch ---------------------------------------------------------------------

void LeaseShardGroup::onGroupListed(const std::vector<NamedLease>& leases) {
  std::vector<std::pair<std::string, election::LeaseRecord>> items;
  std::vector<std::optional<election::LeaseRecord>> shards(config_.shards);
  for (const auto& l : leases) {
    items.emplace_back(l.name, l.record);
    if (auto i = view_.layout().shardOf(l.name)) shards[*i] = l.record;
  }
  view_.listed(items, clock_.now());
  for (std::size_t i = 0; i < config_.shards; i++) {
    if (stores_[i]) stores_[i]->deliver(shards[i]);
  }
  if (observer_) observer_->onGroupListed();
}

void LeaseShardGroup::onGroupLease(const std::string& name,
                                   const std::optional<election::LeaseRecord>& record) {
  view_.changed(name, record, clock_.now());
  if (auto i = view_.layout().shardOf(name); i && stores_[*i]) stores_[*i]->deliver(record);
  if (observer_) observer_->onGroupChanged();
}

void LeaseShardGroup::onGroupWatchState(bool healthy) {
  for (auto* s : stores_) {
    if (s) s->setWatchHealthy(healthy);
  }
}

// ---- the view ----------------------------------------------------------------------------

std::vector<std::string> LeaseShardGroup::liveMembers(time::MonoTime now) const {
  return view_.liveMembers(now);
}

std::vector<std::string> LeaseShardGroup::owners(time::MonoTime now) const {
  return view_.owners(now);
}

std::optional<time::MonoTime> LeaseShardGroup::nextExpiry(time::MonoTime now) const {
  return view_.nextExpiry(now);
}

// One member (the first live identity) deletes what crashed replicas left. A replica that
// was only frozen that long writes its Lease again (404 -> create) when it runs again.
void LeaseShardGroup::tidy(const std::vector<std::string>& members) {
  if (members.empty() || members.front() != config_.identity) return;
  for (const auto& name :
       view_.staleMemberLeases(clock_.now(), 10 * config_.timings.leaseDuration)) {
    if (!deleting_.insert(name).second) continue;
    logger_.info("deleting the membership Lease of a replica gone for 10 lease durations",
                 {{"lease", name}});
    std::weak_ptr<char> alive = alive_;
    api_.call({"delete", "DELETE",
               "/apis/coordination.k8s.io/v1/namespaces/" + config_.ns + "/leases/" + name, "",
               "application/json", config_.requestDeadline},
              [this, alive, name](ApiResponse) {
                if (!alive.expired()) deleting_.erase(name);
              });
  }
}

void LeaseShardGroup::leave(std::function<void()> done) {
  membership_->remove(std::move(done));
}

void LeaseShardGroup::stop() {
  watch_->stop();
}

}  // namespace leasehold::kube
