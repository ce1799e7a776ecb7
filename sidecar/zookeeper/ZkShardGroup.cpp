#include "zookeeper/ZkShardGroup.h"

#include <algorithm>
#include <set>
#include <utility>

#include "zookeeper/ZNodeLockName.h"

namespace leasehold::zookeeper {

namespace {

std::string problemOf(const ZkResult& r) {
  if (!r.message.empty()) return r.message;
  return std::string(toString(r.kind)) + " (code " + std::to_string(static_cast<int>(r.code)) + ")";
}

}  // namespace

ZkShardGroup::ZkShardGroup(time::Clock& clock, ZkClient& zk, ZkShardGroupConfig config,
                           const log::Logger& logger, std::function<std::string()> newUuid)
    : clock_(clock),
      config_(std::move(config)),
      logger_(logger),
      newUuid_(std::move(newUuid)),
      root_("/" + config_.group),
      shared_(clock, zk),
      view_(shared_.share()) {
  dirs_.resize(1 + config_.shards);
  dirs_[0].path = membersPath();
  for (std::size_t i = 0; i < config_.shards; ++i)
    dirs_[1 + i].path = shardPath(i);
  campaignClients_.push_back(shared_.share());
  // Nobody asks the membership for a claim: its node is what counts (the session expires it).
  membership_ = std::make_unique<ZkCampaign>(
      clock_, *campaignClients_.back(),
      ZkCampaignConfig{config_.identity, membersPath(), config_.timings, config_.serverLag},
      newUuid_, &logger_);
  membership_->setEventHandler([this](const election::ElectorEvent& e) {
    if (e.kind == election::ElectorEvent::Kind::kStoreFailed) {
      logger_.warn("membership in " + membersPath() + ": " + e.detail);
    }
  });
  retryTimer_ = clock_.makeTimer([this] { readAll(); });
  std::weak_ptr<char> alive = alive_;
  view_->setSessionHandler([this, alive](const ZkSessionEvent& e) {
    if (!alive.expired()) onSession(e);
  });
}

ZkShardGroup::~ZkShardGroup() = default;

election::LockName ZkShardGroup::shardName(std::size_t shard) const {
  return znodeLockName(config_.group + "/shards/" + std::to_string(shard));
}

std::string ZkShardGroup::shardPath(std::size_t shard) const {
  return root_ + "/shards/" + std::to_string(shard);
}

std::unique_ptr<election::Candidacy> ZkShardGroup::shardCandidacy(std::size_t shard) {
  campaignClients_.push_back(shared_.share());
  return std::make_unique<ZkCampaign>(
      clock_, *campaignClients_.back(),
      // The session is the membership's to log (once, not once per shard).
      ZkCampaignConfig{config_.identity, shardPath(shard), config_.timings, config_.serverLag,
                       /*logSession=*/false},
      newUuid_, &logger_);
}

void ZkShardGroup::start(election::ShardGroupObserver& observer) {
  observer_ = &observer;
  view_->open();  // opens the session (once for all); the view hears kConnected
  membership_->start();
}

// ---- the view ------------------------------------------------------------------------------

void ZkShardGroup::onSession(const ZkSessionEvent& e) {
  if (stopped_) return;
  // Every watch went with the connection: read everything again once connected (which sets
  // them again). Until then the view stays as it was: the campaigns' claim rule, not the
  // view, keeps claims safe.
  if (e.kind == ZkSessionEvent::Kind::kConnected) readAll();
}

void ZkShardGroup::readAll() {
  if (stopped_) return;
  retryTimer_->disarm();
  for (std::size_t d = 0; d < dirs_.size(); ++d)
    readDir(d);
}

std::function<void(const ZkWatchEvent&)> ZkShardGroup::watcher(std::size_t d) {
  std::weak_ptr<char> alive = alive_;
  return [this, alive, d](const ZkWatchEvent& e) {
    if (alive.expired() || stopped_) return;
    // A lost connection: the session handler reads everything once connected again.
    if (e.kind != ZkWatchEvent::Kind::kConnectionLost) readDir(d);
  };
}

void ZkShardGroup::readDir(std::size_t d) {
  auto& dir = dirs_[d];
  if (dir.reading) {
    dir.again = true;
    return;
  }
  dir.reading = true;
  dir.again = false;
  std::weak_ptr<char> alive = alive_;
  view_->getChildren(dir.path, watcher(d),
                     [this, alive, d](ZkResult r, std::vector<std::string> children) {
                       if (!alive.expired()) onChildren(d, r, std::move(children));
                     });
}

void ZkShardGroup::onChildren(std::size_t d, const ZkResult& r, std::vector<std::string> children) {
  auto& dir = dirs_[d];
  dir.reading = false;
  if (stopped_) return;
  if (r.is(ZkCode::kNoNode)) {
    // Not created yet (the first campaign there creates it): nobody is there. An exists-watch
    // says when it appears.
    children.clear();
    std::weak_ptr<char> alive = alive_;
    view_->exists(dir.path, watcher(d), [this, alive, d](ZkResult er, std::optional<ZkStat> st) {
      if (alive.expired() || stopped_) return;
      if (!er.ok()) return retryLater("watching " + dirs_[d].path, er);
      if (st) readDir(d);  // created meanwhile
    });
  } else if (!r.ok()) {
    return retryLater("reading the children of " + dir.path, r);
  }
  if (dir.again) {
    readDir(d);
  }
  // The contenders, in kazoo's order; the data of those we need (every member, a shard's lowest).
  std::vector<std::pair<std::string, std::string>> contenders;  // sequence, name
  for (auto& c : children) {
    if (auto sequence = contenderSequence(c)) contenders.emplace_back(std::move(*sequence), c);
  }
  std::stable_sort(contenders.begin(), contenders.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  dir.contenders.clear();
  for (auto& [sequence, name] : contenders)
    dir.contenders.push_back(std::move(name));
  for (auto it = dir.data.begin(); it != dir.data.end();) {
    const bool present =
        std::find(dir.contenders.begin(), dir.contenders.end(), it->first) != dir.contenders.end();
    it = present ? std::next(it) : dir.data.erase(it);
  }
  dir.read = true;
  if (d == 0) {
    for (const auto& c : dir.contenders) {
      if (!dir.data.contains(c)) readData(d, c);
    }
  } else if (!dir.contenders.empty() && !dir.data.contains(dir.contenders.front())) {
    readData(d, dir.contenders.front());
  }
  changed(d);
}

void ZkShardGroup::readData(std::size_t d, const std::string& child) {
  std::weak_ptr<char> alive = alive_;
  view_->getData(dirs_[d].path + "/" + child, [this, alive, d, child](ZkResult r, std::string data,
                                                                      ZkStat) {
    if (alive.expired() || stopped_) return;
    auto& dir = dirs_[d];
    if (r.is(ZkCode::kNoNode)) return;  // gone: the child watch says so too
    if (!r.ok()) return retryLater("reading " + dir.path + "/" + child, r);
    if (std::find(dir.contenders.begin(), dir.contenders.end(), child) == dir.contenders.end()) {
      return;  // went meanwhile
    }
    // A kazoo contender without an identifier has no data: its name says who.
    dir.data[child] = data.empty() ? child : std::move(data);
    changed(d);
  });
}

void ZkShardGroup::changed(std::size_t) {
  if (!lastProblem_.empty()) logger_.info("the group under " + root_ + " read again");
  lastProblem_.clear();
  if (!observer_) return;
  if (!listed_) {
    // The whole group: every parent read, and the data we need of it (every member's identity,
    // each shard's lowest contender's): a newcomer that saw "nobody owns it" would wait P.
    for (std::size_t d = 0; d < dirs_.size(); ++d) {
      const auto& dir = dirs_[d];
      if (!dir.read) return;
      for (std::size_t c = 0; c < (d == 0 ? dir.contenders.size() : 1); ++c) {
        if (c < dir.contenders.size() && !dir.data.contains(dir.contenders[c])) return;
      }
    }
    listed_ = true;
    observer_->onGroupListed();
    return;
  }
  observer_->onGroupChanged();
}

// Read everything again after P.
void ZkShardGroup::retryLater(const std::string& what, const ZkResult& r) {
  const std::string problem = what + ": " + problemOf(r);
  if (problem != lastProblem_) logger_.warn(problem);
  lastProblem_ = problem;
  if (!retryTimer_->armed()) retryTimer_->armAt(clock_.now() + config_.timings.retryPeriod);
}

std::vector<std::string> ZkShardGroup::liveMembers(time::MonoTime) const {
  std::set<std::string> live{config_.identity};
  for (const auto& [child, identity] : dirs_[0].data)
    live.insert(identity);
  return {live.begin(), live.end()};
}

std::vector<std::string> ZkShardGroup::owners(time::MonoTime) const {
  std::vector<std::string> out(config_.shards);
  for (std::size_t i = 0; i < config_.shards; ++i) {
    const auto& dir = dirs_[1 + i];
    if (dir.contenders.empty()) continue;
    const auto it = dir.data.find(dir.contenders.front());
    if (it != dir.data.end()) out[i] = it->second;
  }
  return out;
}

// ---- leaving -------------------------------------------------------------------------------

void ZkShardGroup::leave(std::function<void()> done) {
  membership_->stop(std::move(done));
}

void ZkShardGroup::stop() {
  stopped_ = true;
  retryTimer_->disarm();
  membership_->stop(nullptr);
}

}  // namespace leasehold::zookeeper
