#include "etcd/EtcdShardGroup.h"

#include <charconv>
#include <set>
#include <string_view>

#include "etcd/ElectionLockName.h"

namespace leasehold::etcd {

namespace {

// "<digits>/<rest>" with a shard number below `shards` (no leading zero): that number.
std::optional<std::size_t> shardOf(std::string_view rest, std::size_t shards) {
  const auto slash = rest.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == rest.size()) return {};
  const std::string_view digits = rest.substr(0, slash);
  if (digits.size() > 1 && digits[0] == '0') return {};
  std::size_t value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size() || value >= shards) return {};
  return value;
}

constexpr std::string_view kMembers = "members/";
constexpr std::string_view kShards = "shards/";

}  // namespace

EtcdShardGroup::EtcdShardGroup(time::Clock& clock, EtcdTransport& etcd, EtcdShardGroupConfig config,
                               const log::Logger& logger)
    : clock_(clock),
      etcd_(etcd),
      config_(std::move(config)),
      logger_(logger),
      prefix_(config_.group + "/") {
  // Nobody asks the membership for a claim (etcd expires a crashed member's key): its
  // keep-alives need no confirming read. The shards' campaigns confirm theirs.
  membership_ = std::make_unique<EtcdCampaign>(
      clock_, etcd_,
      EtcdCampaignConfig{config_.identity, membersElection(), config_.timings,
                         /*confirmKeepAlives=*/false});
  membership_->setEventHandler([this](const election::ElectorEvent& e) {
    if (e.kind == election::ElectorEvent::Kind::kStoreFailed) {
      logger_.warn("membership in " + membersElection() + ": " + e.detail);
    }
  });
  retryTimer_ = clock_.makeTimer([this] { list(); });
}

EtcdShardGroup::~EtcdShardGroup() {
  if (watch_) watch_->cancel();
}

election::LockName EtcdShardGroup::shardName(std::size_t shard) const {
  return electionLockName(shardLock(shard));
}

std::string EtcdShardGroup::shardLock(std::size_t shard) const {
  return prefix_ + std::string(kShards) + std::to_string(shard);
}

std::unique_ptr<election::Candidacy> EtcdShardGroup::shardCandidacy(std::size_t shard) {
  return std::make_unique<EtcdCampaign>(
      clock_, etcd_, EtcdCampaignConfig{config_.identity, shardLock(shard), config_.timings});
}

void EtcdShardGroup::start(election::ShardGroupObserver& observer) {
  observer_ = &observer;
  membership_->start();
  list();
}

// ---- the view ----------------------------------------------------------------------------

void EtcdShardGroup::list() {
  if (stopped_ || listing_) return;
  listing_ = true;
  EtcdCall c;
  c.method = "kv/range";
  c.body = encodeRangeByCreation(prefix_, 0, false, std::nullopt);
  c.idempotent = true;
  c.deadline = std::chrono::duration_cast<std::chrono::milliseconds>(config_.timings.renewDeadline);
  std::weak_ptr<char> alive = alive_;
  etcd_.call(std::move(c), [this, alive](EtcdReply reply) {
    if (alive.expired()) return;
    listing_ = false;
    if (stopped_) return;
    if (!reply.ok()) return retryLater("reading the group's keys under " + prefix_, reply.message);
    Range range;
    std::string error;
    if (!decodeRange(reply.body, range, error)) {
      return retryLater("reading the group's keys under " + prefix_, "malformed answer: " + error);
    }
    if (!lastProblem_.empty()) logger_.info("the group's keys under " + prefix_ + " read again");
    lastProblem_.clear();
    keys_.clear();
    for (const auto& kv : range.kvs)
      keys_[kv.key] = Key{kv.value, kv.createRevision};
    if (watch_) watch_->cancel();
    openWatch(range.header.revision + 1);
    if (observer_) observer_->onGroupListed();
  });
}

void EtcdShardGroup::openWatch(Revision from) {
  std::weak_ptr<char> alive = alive_;
  EtcdWatchCallbacks callbacks;
  callbacks.onMessage = [this, alive](const WatchMessage& m) {
    if (!alive.expired()) onWatch(m);
  };
  callbacks.onEnd = [this, alive](const std::string& why) {
    if (alive.expired() || stopped_) return;
    watch_.reset();
    retryLater("watching " + prefix_, why);
  };
  watch_ = etcd_.watch(
      encodeWatchCreate(prefix_, true, from), std::move(callbacks),
      std::chrono::duration_cast<std::chrono::milliseconds>(config_.timings.renewDeadline),
      std::chrono::milliseconds(0));
}

void EtcdShardGroup::onWatch(const WatchMessage& m) {
  if (m.canceled || m.error) {
    if (watch_) watch_->cancel();
    watch_.reset();
    return retryLater("watching " + prefix_,
                      m.error ? m.error->message
                      : m.compactRevision
                          ? "compacted at revision " + std::to_string(m.compactRevision)
                          : m.cancelReason);
  }
  if (m.events.empty()) return;
  for (const auto& e : m.events) {
    if (e.type == WatchEvent::Type::kDelete) {
      keys_.erase(e.kv.key);
    } else {
      keys_[e.kv.key] = Key{e.kv.value, e.kv.createRevision};
    }
  }
  if (observer_) observer_->onGroupChanged();
}

// Read everything again after P (the watch's revision may be gone; a range is one request).
void EtcdShardGroup::retryLater(const std::string& what, const std::string& why) {
  const std::string problem = what + ": " + why;
  if (problem != lastProblem_) logger_.warn(problem);
  lastProblem_ = problem;
  if (!retryTimer_->armed()) retryTimer_->armAt(clock_.now() + config_.timings.retryPeriod);
}

std::vector<std::string> EtcdShardGroup::liveMembers(time::MonoTime) const {
  std::set<std::string> live{config_.identity};
  const std::string members = prefix_ + std::string(kMembers);
  for (auto it = keys_.lower_bound(members);
       it != keys_.end() && it->first.compare(0, members.size(), members) == 0; ++it) {
    if (it->first.size() > members.size() &&
        it->first.find('/', members.size()) == std::string::npos) {
      live.insert(it->second.value);
    }
  }
  return {live.begin(), live.end()};
}

std::vector<std::string> EtcdShardGroup::owners(time::MonoTime) const {
  std::vector<std::string> out(config_.shards);
  std::vector<Revision> oldest(config_.shards, 0);
  const std::string shards = prefix_ + std::string(kShards);
  for (auto it = keys_.lower_bound(shards);
       it != keys_.end() && it->first.compare(0, shards.size(), shards) == 0; ++it) {
    const auto rest = std::string_view(it->first).substr(shards.size());
    const auto i = shardOf(rest, config_.shards);
    if (!i || rest.find('/', rest.find('/') + 1) != std::string_view::npos) continue;
    if (oldest[*i] == 0 || it->second.createRevision < oldest[*i]) {
      oldest[*i] = it->second.createRevision;
      out[*i] = it->second.value;
    }
  }
  return out;
}

// ---- leaving -----------------------------------------------------------------------------

void EtcdShardGroup::leave(std::function<void()> done) {
  membership_->stop(std::move(done));
}

void EtcdShardGroup::stop() {
  stopped_ = true;
  retryTimer_->disarm();
  if (watch_) watch_->cancel();
  watch_.reset();
  membership_->stop(nullptr);
}

}  // namespace leasehold::etcd
