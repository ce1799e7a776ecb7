// The ZooKeeper campaign (contract in ZkCampaign.h). One file, as EtcdCampaign: the session, our
// node, the view of the queue and the release share the same few fields (the send time of the
// last answered request, our node, whether it is the lowest), and the claim rule reads best next
// to every place that changes them.
#include "zookeeper/ZkCampaign.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <utility>

#include "election/ClaimRule.h"

namespace leasehold::zookeeper {

using election::ElectorEvent;

namespace {

std::string basename(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string describe(const ZkResult& r) {
  if (!r.message.empty()) return r.message;
  switch (r.kind) {
    case ZkResult::Kind::kOk:
      return "ok";
    case ZkResult::Kind::kUnavailable:
      return "no answer";
    case ZkResult::Kind::kSessionExpired:
      return "the session expired";
    case ZkResult::Kind::kDenied:
    case ZkResult::Kind::kRejected:
      break;
  }
  return "ZooKeeper answered error code " + std::to_string(static_cast<int>(r.code));
}

}  // namespace

// kazoo's Lock._contenders_re, `(?:__lock__)(-?\d{10})$` searched in the name: the captured
// sequence, which is also the sort key (kazoo sorts by the captured group, as strings).
std::optional<std::string> contenderSequence(const std::string& name) {
  static const std::string lock = kLockNodeName;
  if (name.size() < 10) return std::nullopt;
  const std::size_t digits = name.size() - 10;
  for (std::size_t i = digits; i < name.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return std::nullopt;
  }
  const auto lockEndsAt = [&](std::size_t end) {
    return end >= lock.size() && name.compare(end - lock.size(), lock.size(), lock) == 0;
  };
  if (lockEndsAt(digits)) return name.substr(digits);
  if (digits >= 1 && name[digits - 1] == '-' && lockEndsAt(digits - 1))
    return name.substr(digits - 1);
  return std::nullopt;
}

std::string randomNodePrefix() {
  static thread_local std::mt19937_64 random{std::random_device{}()};
  static const char* digits = "0123456789abcdef";
  std::string out(32, '0');
  for (auto& c : out)
    c = digits[random() % 16];
  return out;
}

ZkCampaign::ZkCampaign(time::Clock& clock, ZkClient& zk, ZkCampaignConfig config,
                       std::function<std::string()> newUuid, const log::Logger* logger)
    : clock_(clock),
      zk_(zk),
      config_(std::move(config)),
      newUuid_(std::move(newUuid)),
      logger_(logger) {
  if (auto problem = config_.timings.validate()) throw std::invalid_argument(*problem);
  if (config_.identity.empty()) throw std::invalid_argument("the identity is empty");
  const std::string& p = config_.path;
  if (p.empty() || p.front() != '/') {
    throw std::invalid_argument("the election path \"" + p + "\" is not absolute");
  }
  if (p.back() == '/') {
    throw std::invalid_argument("the election path \"" + p + "\" ends with '/'");
  }
  if (p.find("//") != std::string::npos) {
    throw std::invalid_argument("the election path \"" + p + "\" has an empty component");
  }
  if (config_.serverLag < time::Duration::zero()) {
    throw std::invalid_argument("the servers' lag is negative");
  }
  if (!newUuid_) newUuid_ = randomNodePrefix;
  prefix_ = newUuid_() + kLockNodeName;
  tickTimer_ = clock_.makeTimer([this] { tick(); });
  deadlineTimer_ = clock_.makeTimer([this] { onDeadline(); });
  cooldownTimer_ = clock_.makeTimer([this] {
    join();
    armTick(clock_.now() + config_.timings.retryPeriod);
  });
  std::weak_ptr<char> alive = alive_;
  zk_.setSessionHandler([this, alive](const ZkSessionEvent& e) {
    if (!alive.expired()) onSession(e);
  });
}

// Answers still on their way find alive_ gone; the client is the process's and may outlive us.
ZkCampaign::~ZkCampaign() = default;

std::optional<std::string> ZkCampaign::node() const {
  if (!own_) return std::nullopt;
  return own_->name;
}

// ---- answers -------------------------------------------------------------------------------

ZkCampaign::Sent ZkCampaign::sent() const {
  return Sent{sessionEpoch_, connectionEpoch_, nodeEpoch_, clock_.now()};
}

bool ZkCampaign::current(const Sent& s) const {
  return s.session == sessionEpoch_;
}

bool ZkCampaign::answered(const Sent&, const ZkResult& r) {
  const bool reached = r.ok() || r.is(ZkCode::kNoNode) || r.is(ZkCode::kNodeExists);
  if (!reached) return false;
  troubles_.clear();
  if (!refusal_.empty() && !authFailed_) {
    refusal_.clear();
    emit(ElectorEvent::Kind::kObserved, "ZooKeeper answers this candidate's requests again");
  }
  return true;
}

void ZkCampaign::confirm(const Sent& s, const std::string& what) {
  // Only an answer on this connection, after the children were read on it, says both that the
  // session lives and that our view of the queue is current (a reconnect lost our watch).
  if (s.session != sessionEpoch_ || s.connection != connectionEpoch_ ||
      viewEpoch_ != connectionEpoch_) {
    return;
  }
  if (confirmedSentAt_ && *confirmedSentAt_ >= s.at) return;
  confirmedSentAt_ = s.at;
  confirmedAt_ = clock_.wallNow();
  const auto now = clock_.now();
  if (lastLeader_ && leaderAt(now)) {
    emit(ElectorEvent::Kind::kRenewed, what, now - s.at);
    deadlineTimer_->armAt(election::claimEndsAt(*confirmedSentAt_, config_.timings));
  }
  noteLeadershipChange(what);  // a claim that lapsed resumes
}

void ZkCampaign::trouble(const std::string& what, const ZkResult& r) {
  std::string message = what + ": " + describe(r);
  const bool refused = r.kind == ZkResult::Kind::kDenied || r.kind == ZkResult::Kind::kRejected;
  // A refusal (an ACL, a bad path) stays what it is while other requests are answered: said
  // once per session, not every P when it alternates with them.
  if (!(refused ? refusalsSaid_ : troubles_).insert(message).second) {
    if (refused) refusal_ = message;
    return;
  }
  if (refused) refusal_ = message;
  emit(ElectorEvent::Kind::kStoreFailed, std::move(message));
}

// ---- the session ---------------------------------------------------------------------------

void ZkCampaign::start() {
  if (started_) return;
  started_ = true;
  zk_.open();
}

void ZkCampaign::onSession(const ZkSessionEvent& e) {
  logSession(e);
  if (stopped_ && !releasing_) return;
  switch (e.kind) {
    case ZkSessionEvent::Kind::kConnected: {
      connected_ = true;
      if (authFailed_) {
        authFailed_ = false;
        refusal_.clear();
      }
      if (sessionId_ && (e.newSession || *sessionId_ != e.sessionId)) {
        newSession("a new ZooKeeper session: our node went with the old one");
      }
      sessionId_ = e.sessionId;
      checkTimeout(e.negotiatedTimeout);
      if (!started_ || stopped_ || releasing_) return;
      // Every watch went with the old connection: read again (which sets them again).
      if (own_ || !mayJoin()) {
        if (own_ || !eligible_ || eligible_()) refresh();
      }
      join();
      return;
    }
    case ZkSessionEvent::Kind::kDisconnected: {
      // Nothing changes yet: the claim lapses by itself at S + R. The watches are gone.
      ZkResult r;
      r.kind = ZkResult::Kind::kUnavailable;
      r.server = e.server;
      r.message = e.detail;
      trouble("the connection to ZooKeeper", r);
      connected_ = false;
      ++connectionEpoch_;
      ++watchEpoch_;
      watched_.clear();
      return;
    }
    case ZkSessionEvent::Kind::kExpired: {
      connected_ = false;
      ++connectionEpoch_;
      sessionId_.reset();
      newSession("the ZooKeeper session expired: our node went with it");
      ZkResult r;
      r.kind = ZkResult::Kind::kSessionExpired;
      r.message = e.detail.empty() ? "expired" : e.detail;
      trouble("the session", r);
      return;
    }
    case ZkSessionEvent::Kind::kAuthFailed: {
      connected_ = false;
      authFailed_ = true;
      ZkResult r;
      r.kind = ZkResult::Kind::kDenied;
      r.code = ZkCode::kAuthFailed;
      r.message = e.detail.empty() ? "the server refused the credentials" : e.detail;
      trouble("authenticating the session", r);
      noteLeadershipChange("ZooKeeper refused the credentials");
      return;
    }
  }
}

// Which server a session is on, and when it moves or ends: what an operator needs to match
// this process with the servers' own logs (`cons`, session ids in hex as ZooKeeper prints them).
void ZkCampaign::logSession(const ZkSessionEvent& e) const {
  if (!logger_ || !config_.logSession) return;
  char id[20];
  std::snprintf(id, sizeof id, "0x%llx", static_cast<unsigned long long>(e.sessionId));
  switch (e.kind) {
    case ZkSessionEvent::Kind::kConnected:
      logger_->info("zookeeper session established",
                    {{"server", e.server},
                     {"sessionId", id},
                     {"new", e.newSession ? "true" : "false"},
                     {"timeout", time::formatDuration(e.negotiatedTimeout)}});
      return;
    case ZkSessionEvent::Kind::kDisconnected:
      logger_->info("zookeeper connection lost", {{"server", e.server}, {"why", e.detail}});
      return;
    case ZkSessionEvent::Kind::kExpired:
      logger_->warn("zookeeper session expired", {{"server", e.server}, {"why", e.detail}});
      return;
    case ZkSessionEvent::Kind::kAuthFailed:
      logger_->warn("zookeeper refused the credentials", {{"server", e.server}, {"why", e.detail}});
      return;
  }
}

void ZkCampaign::newSession(const std::string& why) {
  refusalsSaid_.clear();
  ++sessionEpoch_;  // answers still on their way belong to the old session: ignored
  ++nodeEpoch_;
  ++watchEpoch_;
  if (own_ && leader_ && leader_->name == own_->name) leader_.reset();
  own_.reset();
  ownIsLowest_ = false;
  watched_.clear();
  confirmedSentAt_.reset();
  joining_ = refreshing_ = refreshAgain_ = pinging_ = reading_ = false;
  createUncertain_ = false;  // whatever it created went with the session
  prefix_ = newUuid_() + kLockNodeName;
  tickTimer_->disarm();
  noteLeadershipChange(why);
}

void ZkCampaign::checkTimeout(time::Duration negotiated) {
  const auto needed = config_.timings.renewDeadline + config_.serverLag +
                      std::max(config_.timings.renewEvery(), config_.timings.retryPeriod);
  if (negotiated >= needed) {
    if (!shortTimeout_.empty()) {
      shortTimeout_.clear();
      troubles_.clear();
      emit(ElectorEvent::Kind::kObserved,
           "the servers gave a session timeout of " + time::formatDuration(negotiated) +
               ", enough for --renew-deadline + --zk-server-lag + the request interval = " +
               time::formatDuration(needed));
    }
    return;
  }
  std::string message = "the servers gave a session timeout of " +
                        time::formatDuration(negotiated) +
                        ", less than --renew-deadline + --zk-server-lag + the request interval = " +
                        time::formatDuration(needed) +
                        ": not joining the election (raise the servers' maxSessionTimeout, or "
                        "lower --renew-deadline)";
  shortTimeout_ = message;
  // Stop claiming at once: this session may end before S + R.
  noteLeadershipChange(message);
  if (own_) removeOwn(nullptr);
  if (troubles_.insert(message).second) emit(ElectorEvent::Kind::kStoreFailed, message);
}

// ---- joining -------------------------------------------------------------------------------

bool ZkCampaign::active() const {
  return started_ && !stopped_ && !releasing_;
}

bool ZkCampaign::mayJoin() const {
  return active() && connected_ && !authFailed_ && shortTimeout_.empty() &&
         !cooldownTimer_->armed() && (!eligible_ || eligible_());
}

void ZkCampaign::join() {
  if (!mayJoin() || own_ || joining_) return;
  joining_ = true;
  if (!pathEnsured_) return ensurePath(1);
  if (createUncertain_) return findOwn();
  create();
}

void ZkCampaign::ensurePath(std::size_t depth) {
  // "/a/b/c": "/a", then "/a/b", then "/a/b/c", each persistent; NodeExists is fine.
  std::size_t end = 0;
  for (std::size_t i = 0; i < depth; ++i) {
    end = config_.path.find('/', end + 1);
    if (end == std::string::npos) break;
  }
  const bool last = end == std::string::npos;
  const std::string part = last ? config_.path : config_.path.substr(0, end);
  const Sent s = sent();
  std::weak_ptr<char> alive = alive_;
  zk_.create(part, "", ZkCreateMode::kPersistent,
             [this, alive, s, part, depth, last](ZkResult r, std::string, ZkStat) {
               if (alive.expired() || !current(s)) return;
               if (answered(s, r)) confirm(s, "created " + part);
               if (r.ok() || r.is(ZkCode::kNodeExists)) {
                 if (!last) return ensurePath(depth + 1);
                 pathEnsured_ = true;
                 joining_ = false;
                 return join();
               }
               joining_ = false;
               if (r.kind != ZkResult::Kind::kSessionExpired) {
                 trouble("creating the election's path " + part, r);
               }
               armTick(clock_.now() + config_.timings.retryPeriod);
             });
}

void ZkCampaign::create() {
  const Sent s = sent();
  const std::string path = full(prefix_);
  std::weak_ptr<char> alive = alive_;
  zk_.create(path, config_.identity, ZkCreateMode::kEphemeralSequential,
             [this, alive, s, path](ZkResult r, std::string created, ZkStat stat) {
               if (alive.expired()) return;
               if (!current(s)) {
                 // Sent before we heard that the session ended: if the client had already
                 // started the next one, the node is that session's, and nobody's candidate.
                 if (r.ok()) zk_.remove(created, -1, [](ZkResult) {});
                 return;
               }
               joining_ = false;
               answered(s, r);
               if (r.ok()) {
                 createUncertain_ = false;
                 if (!mayJoin() || own_) {
                   // Released, stopped or no longer eligible meanwhile: out of the queue again.
                   zk_.remove(created, -1, [](ZkResult) {});
                   return;
                 }
                 own_ = Own{basename(created), stat.czxid};
                 confirm(s, "created " + created);
                 return refresh();
               }
               if (r.kind == ZkResult::Kind::kUnavailable) createUncertain_ = true;
               if (r.is(ZkCode::kNoNode)) pathEnsured_ = false;        // somebody deleted the path
               if (r.kind == ZkResult::Kind::kSessionExpired) return;  // the session event follows
               trouble("joining the election as " + path + "<sequence>", r);
               armTick(clock_.now() + config_.timings.retryPeriod);
             });
}

// A create without an answer may have happened: our node, if there is one, starts with our
// prefix (new for every session, so it can only be this session's).
void ZkCampaign::findOwn() {
  const Sent s = sent();
  std::weak_ptr<char> alive = alive_;
  zk_.getChildren(
      config_.path, nullptr, [this, alive, s](ZkResult r, std::vector<std::string> children) {
        if (alive.expired() || !current(s)) return;
        if (answered(s, r)) confirm(s, "read the children of " + config_.path);
        if (r.is(ZkCode::kNoNode)) {  // the path is gone, and whatever was under it
          joining_ = false;
          createUncertain_ = false;
          pathEnsured_ = false;
          return join();
        }
        if (!r.ok()) {
          joining_ = false;
          if (r.kind != ZkResult::Kind::kSessionExpired) {
            trouble("looking for our node under " + config_.path, r);
          }
          return armTick(clock_.now() + config_.timings.retryPeriod);
        }
        const auto it = std::find_if(children.begin(), children.end(), [&](const auto& c) {
          return c.starts_with(prefix_) && contenderSequence(c);
        });
        if (it == children.end()) {
          createUncertain_ = false;
          return create();
        }
        adopt(*it);
      });
}

void ZkCampaign::adopt(const std::string& name) {
  const Sent s = sent();
  std::weak_ptr<char> alive = alive_;
  zk_.exists(full(name), nullptr, [this, alive, s, name](ZkResult r, std::optional<ZkStat> stat) {
    if (alive.expired() || !current(s)) return;
    joining_ = false;
    if (answered(s, r)) confirm(s, "read " + full(name));
    if (!r.ok()) {
      if (r.kind != ZkResult::Kind::kSessionExpired) {
        trouble("reading our node " + full(name), r);
      }
      return armTick(clock_.now() + config_.timings.retryPeriod);
    }
    createUncertain_ = false;
    if (!stat || (sessionId_ && stat->ephemeralOwner != *sessionId_)) {
      return join();  // gone meanwhile, or not ours: create one
    }
    if (!mayJoin() || own_) {
      zk_.remove(full(name), -1, [](ZkResult) {});
      return;
    }
    own_ = Own{name, stat->czxid};
    refresh();
  });
}

// ---- the queue -----------------------------------------------------------------------------

void ZkCampaign::refresh() {
  if (!started_ || stopped_ || authFailed_) return;
  if (refreshing_) {
    refreshAgain_ = true;
    return;
  }
  refreshing_ = true;
  const Sent s = sent();
  std::weak_ptr<char> alive = alive_;
  zk_.getChildren(config_.path, nullptr,
                  [this, alive, s](ZkResult r, std::vector<std::string> children) {
                    if (alive.expired() || !current(s)) return;
                    onChildren(s, r, std::move(children));
                  });
}

void ZkCampaign::onChildren(const Sent& s, const ZkResult& r, std::vector<std::string> children) {
  refreshing_ = false;
  if (stopped_) return;
  // Read again if asked meanwhile, or if our node changed since the read went out.
  const bool again = std::exchange(refreshAgain_, false) || s.node != nodeEpoch_;
  const bool reached = answered(s, r);
  if (!r.ok() && !r.is(ZkCode::kNoNode)) {
    if (r.kind != ZkResult::Kind::kSessionExpired) {
      trouble("reading the children of " + config_.path, r);
    }
    if (again) return refresh();
    return armTick(s.at + config_.timings.retryPeriod);
  }
  if (again) {
    if (reached) confirm(s, "read the children of " + config_.path);
    return refresh();
  }
  if (r.is(ZkCode::kNoNode)) children.clear();  // no path, no node under it

  // The contenders, in kazoo's order.
  std::vector<std::pair<std::string, std::string>> contenders;  // sequence, name
  std::vector<std::string> foreign;
  for (auto& c : children) {
    if (auto sequence = contenderSequence(c)) {
      contenders.emplace_back(std::move(*sequence), std::move(c));
    } else if (foreignSaid_.insert(c).second) {
      foreign.push_back(std::move(c));
    }
  }
  std::stable_sort(contenders.begin(), contenders.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  if (!foreign.empty() && logger_) {
    std::string names;
    for (const auto& f : foreign)
      names += (names.empty() ? "" : ", ") + f;
    logger_->warn(
        "ignoring children of the election's path that are not contenders (not "
        "<id>__lock__<sequence>)",
        {{"path", config_.path}, {"nodes", names}});
  }

  std::string gone;
  std::string predecessor;
  if (own_) {
    const auto it = std::find_if(contenders.begin(), contenders.end(),
                                 [&](const auto& c) { return c.second == own_->name; });
    if (it == contenders.end()) {
      gone = "our node " + full(own_->name) + " is gone";
      dropOwn();
    } else {
      ownIsLowest_ = it == contenders.begin();
      if (!ownIsLowest_) predecessor = std::prev(it)->second;
    }
  }

  if (contenders.empty()) {
    if (leader_) {
      leader_.reset();
      emit(ElectorEvent::Kind::kObserved, "no candidate under " + config_.path);
    }
  } else {
    const std::string& lowest = contenders.front().second;
    if (own_ && own_->name == lowest) {
      if (!leader_ || leader_->name != lowest) {
        leader_ = Seen{lowest, config_.identity, own_->czxid};
        emit(ElectorEvent::Kind::kObserved, "leader node " + full(lowest) + " (ours)");
      }
    } else if (!leader_ || leader_->name != lowest || (!leader_->czxid && !reading_)) {
      leader_ = Seen{lowest, lowest, std::nullopt};
      readLeader(lowest);  // kNewLeaderObserved once its data says who
    }
  }

  if (own_) {
    const std::string& target = ownIsLowest_ ? own_->name : predecessor;
    if (watched_ != target) watch(target, ownIsLowest_);
  }
  if (!gone.empty()) noteLeadershipChange(gone);
  if (s.connection == connectionEpoch_) viewEpoch_ = connectionEpoch_;
  const bool wasLowestClaim = lastLeader_;
  if (reached) confirm(s, "read the children of " + config_.path);
  noteLeadershipChange("this candidate's node is the lowest under " + config_.path);
  if (!gone.empty()) join();

  if (own_ && ownIsLowest_) {
    // The leader pings every I from its last confirmed send; a new one starts now.
    if (!wasLowestClaim || !tickTimer_->armed()) {
      armTick(confirmedSentAt_.value_or(s.at) + config_.timings.renewEvery());
    }
  } else {
    armTick(s.at + config_.timings.retryPeriod);
  }
}

void ZkCampaign::readLeader(const std::string& name) {
  reading_ = true;
  const Sent s = sent();
  std::weak_ptr<char> alive = alive_;
  zk_.getData(full(name), [this, alive, s, name](ZkResult r, std::string data, ZkStat stat) {
    if (alive.expired() || !current(s)) return;
    reading_ = false;
    if (answered(s, r)) confirm(s, "read " + full(name));
    if (!leader_ || leader_->name != name) return;
    if (r.ok()) {
      // A kazoo contender without an identifier has no data: its node's name says who.
      leader_->holder = data.empty() ? name : data;
      leader_->czxid = stat.czxid;
      emit(ElectorEvent::Kind::kNewLeaderObserved, "leader node " + full(name));
      return;
    }
    if (r.is(ZkCode::kNoNode)) return refresh();  // gone already
    if (r.kind != ZkResult::Kind::kSessionExpired) trouble("reading " + full(name), r);
  });
}

void ZkCampaign::watch(const std::string& name, bool own) {
  const auto epoch = ++watchEpoch_;
  watched_ = name;
  const Sent s = sent();
  std::weak_ptr<char> alive = alive_;
  auto watcher = [this, alive, epoch, own, name](const ZkWatchEvent& e) {
    if (alive.expired() || epoch != watchEpoch_) return;
    ++watchEpoch_;
    watched_.clear();
    if (e.kind == ZkWatchEvent::Kind::kConnectionLost) return;  // the reconnect reads again
    if (own && e.kind == ZkWatchEvent::Kind::kDeleted && own_ && own_->name == name) {
      return ownGone("our node " + full(name) + " was deleted by somebody else");
    }
    refresh();
  };
  zk_.exists(full(name), std::move(watcher),
             [this, alive, s, epoch, own, name](ZkResult r, std::optional<ZkStat> stat) {
               if (alive.expired() || !current(s)) return;
               if (answered(s, r)) confirm(s, "watching " + full(name));
               if (epoch != watchEpoch_) return;
               if (!r.ok()) {
                 watched_.clear();
                 if (r.kind != ZkResult::Kind::kSessionExpired) {
                   trouble("watching " + full(name), r);
                 }
                 return;  // the next read sets it again
               }
               if (stat) return;
               // Gone already: the watch left on the path would fire on a creation.
               ++watchEpoch_;
               watched_.clear();
               if (own && own_ && own_->name == name) {
                 return ownGone("our node " + full(name) + " is gone");
               }
               refresh();  // our predecessor went: look again
             });
}

void ZkCampaign::ownGone(const std::string& why) {
  dropOwn();
  noteLeadershipChange(why);
  join();
  if (!joining_) refresh();
}

void ZkCampaign::dropOwn() {
  if (own_ && leader_ && leader_->name == own_->name) leader_.reset();
  own_.reset();
  ownIsLowest_ = false;
  ++nodeEpoch_;
  ++watchEpoch_;
  watched_.clear();
}

// ---- renewal -------------------------------------------------------------------------------

void ZkCampaign::armTick(time::MonoTime at) {
  if (!active()) return;
  tickTimer_->armAt(at);
}

void ZkCampaign::tick() {
  if (!active() || authFailed_) return;
  if (own_ && ownIsLowest_) {
    ping();
    if (watched_ != own_->name) refresh();  // our watch went with a connection
    return;
  }
  if (!own_ && mayJoin()) {
    join();
    if (joining_) return;  // the create's answer reads the children
  }
  if (own_ || !eligible_ || eligible_()) refresh();
}

void ZkCampaign::ping() {
  if (pinging_) return;
  pinging_ = true;
  const Sent s = sent();
  std::weak_ptr<char> alive = alive_;
  zk_.ping([this, alive, s](ZkResult r) {
    if (alive.expired() || !current(s)) return;
    pinging_ = false;
    if (answered(s, r)) {
      confirm(s, "ping answered");
      return armTick(s.at + config_.timings.renewEvery());
    }
    if (r.kind != ZkResult::Kind::kSessionExpired) trouble("pinging the session", r);
    if (lastLeader_) emit(ElectorEvent::Kind::kRenewFailed, "pinging the session: " + describe(r));
    armTick(s.at + config_.timings.retryPeriod);
  });
}

void ZkCampaign::onDeadline() {
  noteLeadershipChange("renew deadline (" + time::formatDuration(config_.timings.renewDeadline) +
                       ") passed without an answer from ZooKeeper");
}

// ---- release -------------------------------------------------------------------------------

void ZkCampaign::stop(std::function<void()> done) {
  beginRelease(std::nullopt, std::move(done));
}

void ZkCampaign::releaseFor(time::Duration cooldown, std::function<void()> done) {
  beginRelease(cooldown, std::move(done));
}

void ZkCampaign::handOver(std::function<void()> done) {
  beginRelease(time::Duration::zero(), std::move(done));
}

void ZkCampaign::reconsider() {
  if (eligible_ && !eligible_()) {
    // Shard mode: no longer assigned here. A node waiting in the queue would lead once the
    // holder goes, so it leaves the queue; a leader is left alone (ShardMode releases it).
    if (own_ && !leaderAt(clock_.now()) && active()) removeOwn(nullptr);
    return;
  }
  join();
}

void ZkCampaign::removeOwn(std::function<void(bool removed)> then) {
  const std::string path = full(own_->name);
  dropOwn();
  const Sent s = sent();
  std::weak_ptr<char> alive = alive_;
  zk_.remove(path, -1, [this, alive, s, path, then = std::move(then)](ZkResult r) {
    if (alive.expired()) return;
    if (!current(s)) {  // the session ended, and took the node along
      if (then) then(true);
      return;
    }
    if (answered(s, r)) confirm(s, "deleted " + path);
    if (r.ok() || r.is(ZkCode::kNoNode)) {
      if (then) then(true);
      return;
    }
    // It may still be there, until the session ends: the next join looks for it first.
    createUncertain_ = true;
    if (r.kind != ZkResult::Kind::kSessionExpired) {
      trouble("deleting our node " + path + " (it goes when the session ends)", r);
    }
    if (then) then(false);
  });
}

void ZkCampaign::beginRelease(std::optional<time::Duration> cooldown, std::function<void()> done) {
  if (done) releaseDone_.push_back(std::move(done));
  if (!cooldown) stopped_ = true;
  if (releasing_) return;  // the delete in flight finishes it
  releasing_ = true;
  cooldownTime_ = cooldown.value_or(time::Duration::zero());
  tickTimer_->disarm();
  cooldownTimer_->disarm();
  // Stop claiming first: whoever asks from now on hears leader=false.
  noteLeadershipChange("releasing the lock", /*voluntary=*/true);
  if (!own_) return finishRelease();  // a create in flight deletes its node when answered
  removeOwn([this](bool removed) {
    if (removed) emit(ElectorEvent::Kind::kReleased, "our node deleted");
    finishRelease();
  });
}

void ZkCampaign::finishRelease() {
  releasing_ = false;
  if (!stopped_) {
    cooldownTimer_->armAt(clock_.now() + cooldownTime_);
    armTick(clock_.now() + config_.timings.retryPeriod);  // the holder, meanwhile
  }
  auto done = std::move(releaseDone_);
  releaseDone_.clear();
  for (auto& f : done)
    f();
}

// ---- leadership ----------------------------------------------------------------------------

bool ZkCampaign::leaderAt(time::MonoTime now) const {
  return active() && !authFailed_ && shortTimeout_.empty() && own_ && ownIsLowest_ &&
         confirmedSentAt_ && now < election::claimEndsAt(*confirmedSentAt_, config_.timings);
}

election::Leadership ZkCampaign::leadership() const {
  election::Leadership l;
  l.identity = config_.identity;
  l.problem = shortTimeout_.empty() ? refusal_ : shortTimeout_;
  if (leader_) {
    l.holder = leader_->holder;
    l.fencingToken = leader_->czxid;
  }
  const auto now = clock_.now();
  if (leaderAt(now)) {
    election::describeClaim(l, own_->czxid,
                            election::claimEndsAt(*confirmedSentAt_, config_.timings), now, clock_);
    l.acquireTime = acquiredAt_;
    l.renewTime = confirmedAt_;
  }
  return l;
}

std::optional<time::Duration> ZkCampaign::holdingWithoutRenewalFor() const {
  if (!own_ || !ownIsLowest_ || !confirmedSentAt_) return std::nullopt;
  return clock_.now() - *confirmedSentAt_;
}

void ZkCampaign::noteLeadershipChange(std::string detail, bool voluntary) {
  const bool leader = leaderAt(clock_.now());
  if (leader == lastLeader_) return;
  lastLeader_ = leader;
  if (leader) {
    if (acquiredToken_ != own_->czxid) acquiredAt_ = clock_.wallNow();
    acquiredToken_ = own_->czxid;
    deadlineTimer_->armAt(election::claimEndsAt(*confirmedSentAt_, config_.timings));
  } else {
    deadlineTimer_->disarm();
  }
  emit(leader ? ElectorEvent::Kind::kAcquired : ElectorEvent::Kind::kSteppedDown, std::move(detail),
       {}, voluntary && !leader);
}

void ZkCampaign::emit(ElectorEvent::Kind kind, std::string detail, time::Duration latency,
                      bool voluntary) {
  if (!handler_) return;
  ElectorEvent e{kind, leader_ ? leader_->holder : std::string(), std::nullopt, std::move(detail),
                 latency};
  e.voluntary = voluntary;
  if (own_ && (kind == ElectorEvent::Kind::kAcquired || kind == ElectorEvent::Kind::kRenewed)) {
    e.token = own_->czxid;
  } else if (leader_) {
    e.token = leader_->czxid;
  }
  handler_(e);
}

}  // namespace leasehold::zookeeper
