#include "shard/ShardMode.h"

#include <nlohmann/json.hpp>

#include "kube/LeaseClient.h"
#include "kube/LeaseElection.h"
#include "shard/ShardAssignment.h"

namespace leasehold::shard {

namespace {
constexpr time::Duration kMillisecond = std::chrono::milliseconds(1);
}

ShardMode::ShardMode(time::Clock& clock, ShardModeConfig config, kube::ApiTransport& api,
                     publish::Metrics& metrics, const log::Logger& logger,
                     std::function<double()> random01)
    : clock_(clock),
      config_(std::move(config)),
      metrics_(metrics),
      logger_(logger),
      view_(shard::GroupLayout{config_.group.name, config_.shards}, config_.identity,
            config_.timings.leaseDuration),
      api_(api),
      assigned_(config_.shards, 0),
      dropping_(config_.shards, 0),
      releasing_(config_.shards, 0) {
  const auto& layout = view_.layout();
  const std::vector<std::pair<std::string, std::string>> labels = {
      {kShardGroupLabel, config_.group.name}};
  kube::LeaseClientOptions leaseOptions;
  leaseOptions.requestDeadline = config_.requestDeadline;
  shardLoggers_.reserve(config_.shards);
  for (std::size_t i = 0; i < config_.shards; i++) {
    const std::string name = layout.shardLease(i);
    shardLoggers_.push_back(logger_.with({{"shard", std::to_string(i)}}));
    auto writes = std::make_unique<kube::LeaseClient>(
        api, clock_,
        kube::LeaseTarget{name, config_.group.ns, config_.podName, config_.podIp, labels},
        leaseOptions, random01);
    auto store = std::make_unique<shard::ShardLeaseStore>(std::move(writes));
    stores_.push_back(store.get());
    lock::SidecarConfig sc{
        {election::Identity{config_.identity}, config_.timings, election::FollowerMode::kWatch},
        {config_.group.ns, name},
        time::Duration::zero()};
    sc.alias = config_.podName;
    lock::SidecarPorts ports;
    ports.candidacy =
        std::make_unique<kube::LeaseElection>(clock_, std::move(store), sc.elector, random01);
    // Shard mode records no Kubernetes Events: N shards moving would flood them; the log and
    // /shards/watch say what moved.
    ports.events = {[](std::string) {}, [](auto, auto done) { done(); }};
    ports.leadershipMayHaveChanged = [this, i] { onShardEvent(i); };
    if (i < config_.commands.size()) ports.command = config_.commands[i];
    auto sidecar = std::make_unique<lock::Sidecar>(std::move(sc), std::move(ports), metrics_,
                                                   shardLoggers_.back());
    sidecar->setEligibility([this, i] { return eligible(i); });
    sidecars_.push_back(std::move(sidecar));
    drainTimers_.push_back(clock_.makeTimer([this, i] { releaseDropped(i); }));
  }

  shard::MembershipLeaseOptions mo;
  mo.identity = config_.identity;
  mo.duration = config_.timings.leaseDuration;
  // Three writes per duration: one lost write does not make the others drop this member.
  mo.period =
      std::max<time::Duration>(config_.timings.leaseDuration / 3, config_.timings.retryPeriod);
  mo.onProblem = [this](const std::string& what) { logger_.warn(what); };
  membership_ = std::make_unique<shard::MembershipLease>(
      clock_,
      std::make_unique<kube::LeaseClient>(
          api, clock_,
          kube::LeaseTarget{layout.memberLease(config_.identity), config_.group.ns, config_.podName,
                            config_.podIp, labels},
          leaseOptions, random01),
      api, mo);

  kube::LeaseGroupWatchOptions wo;
  wo.ns = config_.group.ns;
  wo.labelSelector = std::string(kShardGroupLabel) + "=" + config_.group.name;
  wo.requestDeadline = config_.requestDeadline;
  wo.watchTimeoutSeconds = config_.watchTimeoutSeconds;
  wo.onProblem = [this](const std::string& what) { logger_.warn(what); };
  watch_ = std::make_unique<kube::LeaseGroupWatch>(
      api, clock_, static_cast<kube::LeaseGroupObserver&>(*this), wo, random01);

  rebalanceTimer_ = clock_.makeTimer([this] { rebalance(); });
  expiryTimer_ = clock_.makeTimer([this] { rebalance(); });
  settleTimer_ = clock_.makeTimer([this] {
    settled_ = true;
    rebalance();
    for (auto& s : sidecars_)
      s->reconsider();
  });
}

ShardMode::~ShardMode() = default;

void ShardMode::start() {
  membership_->start();
  watch_->start();
  settleTimer_->armAt(clock_.now() + config_.timings.retryPeriod);
}

// ---- the group watch ---------------------------------------------------------------------

void ShardMode::onGroupListed(const std::vector<kube::NamedLease>& leases) {
  const auto now = clock_.now();
  std::vector<std::pair<std::string, election::LeaseRecord>> items;
  std::vector<std::optional<election::LeaseRecord>> shards(config_.shards);
  for (const auto& l : leases) {
    items.emplace_back(l.name, l.record);
    if (auto i = view_.layout().shardOf(l.name)) shards[*i] = l.record;
  }
  view_.listed(items, now);
  for (std::size_t i = 0; i < config_.shards; i++)
    stores_[i]->deliver(shards[i]);
  if (!listed_) {
    listed_ = true;
    // A group that already runs (some shard held): the assignment keeps what others own, so
    // there is nothing to wait for. Only a cold start waits P for the others to show up.
    for (const auto& owner : view_.owners(now)) {
      if (!owner.empty()) settled_ = true;
    }
    if (settled_) settleTimer_->disarm();
    // The Electors start once the group is known: each hears its Lease from the list at once.
    for (auto& s : sidecars_)
      s->start();
  }
  rebalanceSoon();
}

void ShardMode::onGroupLease(const std::string& name,
                             const std::optional<election::LeaseRecord>& record) {
  view_.changed(name, record, clock_.now());
  if (auto i = view_.layout().shardOf(name)) stores_[*i]->deliver(record);
  rebalanceSoon();
}

void ShardMode::onGroupWatchState(bool healthy) {
  for (auto* s : stores_)
    s->setWatchHealthy(healthy);
}

// ---- the assignment ----------------------------------------------------------------------

// After the current handler: an Elector's event may be what triggered it.
void ShardMode::rebalanceSoon() {
  if (!rebalanceTimer_->armed()) rebalanceTimer_->armAt(clock_.now());
}

void ShardMode::rebalance() {
  if (!listed_ || stopping_) return;
  const auto now = clock_.now();
  const auto members = view_.liveMembers(now);
  const auto target = shard::ShardAssignment::assign(view_.owners(now), members);
  for (std::size_t i = 0; i < config_.shards; i++) {
    const bool mine = target[i] == config_.identity;
    if (mine && !assigned_[i]) {
      assigned_[i] = 1;
      if (settled_ && !dropping_[i]) sidecars_[i]->reconsider();
    } else if (!mine) {
      assigned_[i] = 0;
      if (!dropping_[i] && !releasing_[i] && sidecars_[i]->leadership().leader) drop(i);
    }
  }
  collectStaleMembers(members);
  if (auto next = view_.nextExpiry(now)) {
    expiryTimer_->armAt(*next + kMillisecond);
  } else {
    expiryTimer_->disarm();
  }
  noteOwnedSet();
}

// One member (the first live identity) deletes what crashed replicas left. A replica that
// was only frozen that long writes its Lease again (404 -> create) when it runs again.
void ShardMode::collectStaleMembers(const std::vector<std::string>& members) {
  if (members.empty() || members.front() != config_.identity) return;
  for (const auto& name :
       view_.staleMemberLeases(clock_.now(), 10 * config_.timings.leaseDuration)) {
    if (!deleting_.insert(name).second) continue;
    logger_.info("deleting the membership Lease of a replica gone for 10 lease durations",
                 {{"lease", name}});
    std::weak_ptr<char> alive = alive_;
    api_.call({"delete", "DELETE",
               "/apis/coordination.k8s.io/v1/namespaces/" + config_.group.ns + "/leases/" + name,
               "", "application/json", config_.requestDeadline},
              [this, alive, name](kube::ApiResponse) {
                if (!alive.expired()) deleting_.erase(name);
              });
  }
}

void ShardMode::drop(std::size_t i) {
  dropping_[i] = 1;
  shardLoggers_[i].info("shard no longer assigned here: dropped",
                        {{"drain", time::formatDuration(config_.drain)}});
  noteOwnedSet();  // stops claiming it at once
  if (config_.drain <= time::Duration::zero()) return releaseDropped(i);
  drainTimers_[i]->armAt(clock_.now() + config_.drain);
}

void ShardMode::releaseDropped(std::size_t i) {
  if (!dropping_[i]) return;
  dropping_[i] = 0;
  if (stopping_) return;  // the shutdown releases everything
  if (assigned_[i]) {
    // Assigned here again while draining: keep it.
    noteOwnedSet();
    return;
  }
  // Sidecar mode: leader=false at once, then the release write. Run mode: the command is
  // stopped first; until the release lands the shard stays out of the owned set.
  releasing_[i] = 1;
  sidecars_[i]->release();
  if (!sidecars_[i]->leadership().leader) releasing_[i] = 0;
  noteOwnedSet();
}

bool ShardMode::eligible(std::size_t i) const {
  return settled_ && !stopping_ && assigned_[i] && !dropping_[i] && !releasing_[i];
}

bool ShardMode::owns(std::size_t i) const {
  return !stopping_ && !dropping_[i] && !releasing_[i] && sidecars_[i]->leadership().leader;
}

void ShardMode::onShardEvent(std::size_t i) {
  if (releasing_[i] && !sidecars_[i]->leadership().leader) {
    releasing_[i] = 0;
    // Run mode, assigned here again meanwhile: take it back.
    if (!config_.commands.empty() && eligible(i)) sidecars_[i]->reconsider();
  }
  noteOwnedSet();
  rebalanceSoon();
}

void ShardMode::noteOwnedSet() {
  std::string key;
  for (std::size_t i = 0; i < config_.shards; i++) {
    if (!owns(i)) continue;
    const auto l = sidecars_[i]->leadership();
    key += std::to_string(i) + ":" + std::to_string(l.fencingToken.value_or(-1)) + ",";
  }
  if (key == lastOwnedKey_) return;
  lastOwnedKey_ = key;
  if (ownedChanged_) ownedChanged_();
}

// ---- what the app sees -------------------------------------------------------------------

std::string ShardMode::json() const {
  nlohmann::ordered_json j;
  j["identity"] = config_.identity;
  j["group"] = config_.group.name;
  j["shards"] = config_.shards;
  j["members"] = view_.liveMembers(clock_.now()).size();
  auto owned = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < config_.shards; i++) {
    if (!owns(i)) continue;
    const auto l = sidecars_[i]->leadership();
    nlohmann::ordered_json o;
    o["shard"] = i;
    o["lease"] = view_.layout().shardLease(i);
    o["fencingToken"] = l.fencingToken.value_or(0);
    if (l.validUntil) o["validUntil"] = time::formatMicroTime(*l.validUntil);
    owned.push_back(std::move(o));
  }
  j["owned"] = std::move(owned);
  return j.dump();
}

election::Leadership ShardMode::leadership() const {
  auto l = sidecars_[0]->leadership();
  if (l.leader && !owns(0)) {
    l.leader = false;
    l.validUntil.reset();
    l.validUntilMono.reset();
  }
  return l;
}

void ShardMode::releaseShardZero() {
  if (stopping_) return;
  const bool runMode = !config_.commands.empty();
  if (!runMode || !sidecars_[0]->leadership().leader || releasing_[0]) {
    return sidecars_[0]->release();
  }
  // Run mode, as a dropped shard: out of the owned set while its command stops and until the
  // release lands, then taken again if it is still assigned here.
  releasing_[0] = 1;
  sidecars_[0]->release();
  if (!sidecars_[0]->leadership().leader) releasing_[0] = 0;
  noteOwnedSet();
}

std::optional<std::string> ShardMode::unhealthyReason() const {
  for (std::size_t i = 0; i < config_.shards; i++) {
    if (auto why = sidecars_[i]->unhealthyReason())
      return "shard " + std::to_string(i) + ": " + *why;
  }
  return std::nullopt;
}

std::string ShardMode::metricsText() const {
  std::string owned;
  std::size_t count = 0;
  for (std::size_t i = 0; i < config_.shards; i++) {
    if (!owns(i)) continue;
    count++;
    owned += "leasehold_shard_fencing_token{shard=\"" + std::to_string(i) + "\"} " +
             std::to_string(sidecars_[i]->leadership().fencingToken.value_or(0)) + "\n";
  }
  std::string out;
  out += "# HELP leasehold_shards_owned Shards this member owns now.\n";
  out += "# TYPE leasehold_shards_owned gauge\n";
  out += "leasehold_shards_owned " + std::to_string(count) + "\n";
  out += "# HELP leasehold_shard_members Live members of the shard group as this member sees it.\n";
  out += "# TYPE leasehold_shard_members gauge\n";
  out += "leasehold_shard_members " + std::to_string(view_.liveMembers(clock_.now()).size()) + "\n";
  out += "# HELP leasehold_shard_fencing_token The fencing token of each shard owned here.\n";
  out += "# TYPE leasehold_shard_fencing_token gauge\n";
  return out + owned;
}

// ---- shutdown ----------------------------------------------------------------------------

bool ShardMode::shutdown(std::function<void()> done) {
  if (stopping_) return false;
  stopping_ = true;
  shutdownDone_ = std::move(done);
  for (auto& t : drainTimers_)
    t->disarm();
  noteOwnedSet();  // nothing is owned from now on
  std::weak_ptr<char> alive = alive_;
  membership_->remove([this, alive] {
    if (alive.expired()) return;
    auto waiting = std::make_shared<std::size_t>(sidecars_.size());
    for (auto& s : sidecars_) {
      s->shutdown([this, alive, waiting] {
        if (alive.expired() || --*waiting != 0) return;
        watch_->stop();
        if (auto d = std::move(shutdownDone_)) d();
      });
    }
  });
  return true;
}

}  // namespace leasehold::shard
