#include "shard/ShardMode.h"

#include <nlohmann/json.hpp>

#include <utility>

#include "shard/ShardAssignment.h"

namespace leasehold::shard {

namespace {
constexpr time::Duration kMillisecond = std::chrono::milliseconds(1);
}

ShardMode::ShardMode(time::Clock& clock, ShardModeConfig config,
                     std::unique_ptr<election::ShardGroup> group, publish::Metrics& metrics,
                     const log::Logger& logger)
    : clock_(clock),
      config_(std::move(config)),
      metrics_(metrics),
      logger_(logger),
      group_(std::move(group)),
      shards_(group_->shards()),
      assigned_(shards_, 0),
      dropping_(shards_, 0),
      releasing_(shards_, 0) {
  shardLoggers_.reserve(shards_);
  for (std::size_t i = 0; i < shards_; i++) {
    shardLoggers_.push_back(logger_.with({{"shard", std::to_string(i)}}));
    lock::SidecarConfig sc{{election::Identity{config_.identity}, config_.timings},
                           group_->shardName(i),
                           time::Duration::zero()};
    sc.alias = config_.podName;
    lock::SidecarPorts ports;
    ports.candidacy = group_->shardCandidacy(i);
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
  group_->start(*this);
  settleTimer_->armAt(clock_.now() + config_.timings.retryPeriod);
}

// ---- the group ---------------------------------------------------------------------------

void ShardMode::onGroupListed() {
  if (!listed_) {
    listed_ = true;
    // A group that already runs (some shard held): the assignment keeps what others own, so
    // there is nothing to wait for. Only a cold start waits P for the others to show up.
    for (const auto& owner : group_->owners(clock_.now())) {
      if (!owner.empty()) settled_ = true;
    }
    if (settled_) settleTimer_->disarm();
    // The candidacies start once the group is known: each hears its lock at once.
    for (auto& s : sidecars_)
      s->start();
  }
  rebalanceSoon();
}

void ShardMode::onGroupChanged() {
  rebalanceSoon();
}

// ---- the assignment ----------------------------------------------------------------------

// After the current handler: an Elector's event may be what triggered it.
void ShardMode::rebalanceSoon() {
  if (!rebalanceTimer_->armed()) rebalanceTimer_->armAt(clock_.now());
}

void ShardMode::rebalance() {
  if (!listed_ || stopping_) return;
  const auto now = clock_.now();
  const auto members = group_->liveMembers(now);
  const auto target = shard::ShardAssignment::assign(group_->owners(now), members);
  for (std::size_t i = 0; i < shards_; i++) {
    const bool mine = target[i] == config_.identity;
    if (mine && !assigned_[i]) {
      assigned_[i] = 1;
      if (settled_ && !dropping_[i]) sidecars_[i]->reconsider();
    } else if (!mine) {
      const bool was = std::exchange(assigned_[i], 0);
      if (!dropping_[i] && !releasing_[i] && sidecars_[i]->leadership().leader) {
        drop(i);
      } else if (was) {
        // Not ours any more and not held: a candidacy waiting in a queue (etcd) leaves it.
        sidecars_[i]->reconsider();
      }
    }
  }
  group_->tidy(members);
  if (auto next = group_->nextExpiry(now)) {
    expiryTimer_->armAt(*next + kMillisecond);
  } else {
    expiryTimer_->disarm();
  }
  noteOwnedSet();
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
  for (std::size_t i = 0; i < shards_; i++) {
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
  j["group"] = config_.group;
  j["shards"] = shards_;
  j["members"] = group_->liveMembers(clock_.now()).size();
  auto owned = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < shards_; i++) {
    if (!owns(i)) continue;
    const auto l = sidecars_[i]->leadership();
    nlohmann::ordered_json o;
    o["shard"] = i;
    o["lease"] = group_->shardName(i).name;
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
  for (std::size_t i = 0; i < shards_; i++) {
    if (auto why = sidecars_[i]->unhealthyReason())
      return "shard " + std::to_string(i) + ": " + *why;
  }
  return std::nullopt;
}

std::string ShardMode::metricsText() const {
  std::string owned;
  std::size_t count = 0;
  for (std::size_t i = 0; i < shards_; i++) {
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
  out +=
      "leasehold_shard_members " + std::to_string(group_->liveMembers(clock_.now()).size()) + "\n";
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
  group_->leave([this, alive] {
    if (alive.expired()) return;
    auto waiting = std::make_shared<std::size_t>(sidecars_.size());
    for (auto& s : sidecars_) {
      s->shutdown([this, alive, waiting] {
        if (alive.expired() || --*waiting != 0) return;
        group_->stop();
        if (auto d = std::move(shutdownDone_)) d();
      });
    }
  });
  return true;
}

}  // namespace leasehold::shard
