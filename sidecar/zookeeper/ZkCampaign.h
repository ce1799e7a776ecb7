#pragma once
// The Candidacy on ZooKeeper (docs/design.md, "The ZooKeeper store"), in kazoo's Election/Lock
// layout, so that a kazoo `client.Election(path, identifier)` and leasehold's candidates compete
// on one path:
//
//  - once eligible, each candidate makes sure the election path exists (persistent parents,
//    NodeExists is fine) and creates an ephemeral-sequential node `<path>/<32 hex>__lock__`
//    (the server appends a 10-digit sequence), data = its identity. The contenders are the
//    children matching `__lock__(-?\d{10})$`, in the string order of that suffix (as kazoo);
//    other children are ignored (said once in the log). A create without an answer may have
//    happened: before creating again the candidate looks for a child with its own prefix and
//    adopts it (Curator's and kazoo's trick), so it never has two nodes;
//  - the lowest contender leads. The others set an exists-watch on their predecessor only (no
//    herd effect) and read the children again when it fires; the leader watches its own node
//    (deleted by somebody else: the claim ends at once and it queues again);
//  - fencing token = the leader node's czxid, not its sequence: ZooKeeper may delete and
//    recreate the parent, which restarts the counter, while zxids only go up. Every node that
//    exists while a leader leads was created after its node, so tokens go up term by term;
//  - the claim rule of election/ClaimRule.h: leader only while its node is the lowest contender
//    as last read AND now < S + R, S the send time (ZkResult::sentAt) of the last request
//    answered on the current session (create, read or ping) since the children were last read
//    on the current connection. The leader pings every I (--renew-interval), every P after a
//    failure; a follower reads the children every P (and the lowest node's data when it
//    changed: the holder's identity).
//
// Why S + R is safe (docs/design.md, "The ZooKeeper store"): the ensemble expires a session T
// (the negotiated session timeout) after its leader last heard of it. A server cut off from its
// leader goes on answering for up to L (tickTime x (syncLimit + 1), less half a tick) before it
// drops its clients, and the leader hears of a session's requests at a follower only in the
// follower's next report, which names the sessions active since the last one: the last activity
// it knows of can be one request interval, max(I, P), older than its last report. So a session
// lives at least until S - L - max(I, P) + T, and the campaign joins only on a session whose
// negotiated timeout is at least R + L + max(I, P) (ZkCampaignConfig::serverLag is L); with less,
// it stays out and says why (Leadership::problem) until a session with enough arrives.
//
// Session events: a disconnection changes nothing at once (the claim lapses by itself at S + R),
// but every watch is lost: on reconnecting to the same session it reads the children again and
// sets its watch again. An expired session, or a new one, took the node along: the claim ends at
// once and the candidate queues again at the back (a new node, a higher token). A refused
// authentication is a refusal (Leadership::problem).
//
// No I/O of its own: ZooKeeper through ZkClient, time through Clock, so that every race replays
// in a unit test on a fake clock. start() opens the session (ZkClient::open) and the campaign is
// its only session handler: one ZkClient per campaign.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "election/Candidacy.h"
#include "election/ElectionTimings.h"
#include "log/Logger.h"
#include "time/Clock.h"
#include "zookeeper/ZkClient.h"

namespace leasehold::zookeeper {

struct ZkCampaignConfig {
  std::string identity;  // the node's data: what kazoo's contenders() and /leader's holder show
  std::string path;      // the election's znode, absolute within the chroot: "/leasehold/app"
  election::ElectionTimings timings;
  // L: how long a ZooKeeper server cut off from the ensemble's leader goes on answering its
  // clients (tickTime x (syncLimit + 1) of the servers' zoo.cfg). The session timeout must be
  // at least R + L + max(I, P).
  time::Duration serverLag{};
  // Whether this campaign logs its session's events (with a logger): false for all but one of
  // the campaigns that share a session (shard mode: ZkShardGroup's membership logs them once).
  bool logSession = true;
};

// The node name's middle: kazoo's Lock._NODE_NAME.
inline constexpr const char* kLockNodeName = "__lock__";

// A child's sequence if it is a contender (kazoo's `__lock__(-?\d{10})$`), also its sort key
// (kazoo sorts the contenders by it, as strings).
std::optional<std::string> contenderSequence(const std::string& name);

// 32 random hex digits, as kazoo's uuid.uuid4().hex.
std::string randomNodePrefix();

class ZkCampaign final : public election::Candidacy {
 public:
  // Throws std::invalid_argument for impossible timings, an empty identity, a path that is not
  // absolute or ends with '/'. newUuid gives each session's node prefix (32 hex digits; the
  // default is random); logger, where given, hears of foreign nodes under the path.
  ZkCampaign(time::Clock& clock, ZkClient& zk, ZkCampaignConfig config,
             std::function<std::string()> newUuid = {}, const log::Logger* logger = nullptr);
  ~ZkCampaign() override;
  ZkCampaign(const ZkCampaign&) = delete;
  ZkCampaign& operator=(const ZkCampaign&) = delete;

  // Opens the session; the candidate joins once it is connected (and eligible).
  void start() override;
  // Stops claiming at once, then deletes the node: the next candidate leads as soon as its
  // watch fires. The process closes the session after (ZkClient::close), which would take the
  // node along anyway.
  void stop(std::function<void()> done) override;
  void releaseFor(time::Duration cooldown, std::function<void()> done) override;
  // ZooKeeper's queue has no way to name the next holder: the same as releaseFor(0).
  void handOver(std::function<void()> done) override;

  election::Leadership leadership() const override;
  std::optional<time::Duration> holdingWithoutRenewalFor() const override;
  void setEventHandler(std::function<void(const election::ElectorEvent&)> handler) override {
    handler_ = std::move(handler);
  }
  void setAlias(std::string) override {}  // handovers name nobody on ZooKeeper
  // Shard mode: no node until eligible (the session is opened by start() all the same);
  // reconsider() while not eligible deletes a node that waits in the queue, not one that leads.
  void setEligibility(std::function<bool()> eligible) override { eligible_ = std::move(eligible); }
  void reconsider() override;

  const std::string& path() const { return config_.path; }
  // This candidate's node (its name under path()), once it has one.
  std::optional<std::string> node() const;

 private:
  struct Own {
    std::string name;
    std::int64_t czxid = 0;
  };
  struct Seen {  // the lowest contender, as last read
    std::string name;
    std::string holder;  // its data, or its name when empty (a kazoo contender without id)
    std::optional<std::int64_t> czxid;
  };
  // What a request was sent under: answers from an earlier session or for a node since
  // dropped are ignored.
  struct Sent {
    std::uint64_t session = 0;
    std::uint64_t connection = 0;
    std::uint64_t node = 0;
    time::MonoTime at{};
  };

  void onSession(const ZkSessionEvent& e);
  void newSession(const std::string& why);
  void logSession(const ZkSessionEvent& e) const;
  bool active() const;  // started, not stopped or releasing
  bool mayJoin() const;
  void join();
  void ensurePath(std::size_t depth);
  void create();
  void findOwn();
  void adopt(const std::string& name);
  void refresh();
  void onChildren(const Sent& sent, const ZkResult& r, std::vector<std::string> children);
  void readLeader(const std::string& name);
  void watch(const std::string& name, bool own);
  void ping();
  void tick();
  void armTick(time::MonoTime at);
  void ownGone(const std::string& why);
  void dropOwn();
  void removeOwn(std::function<void(bool removed)> then);
  void removeByPrefix(std::function<void()> then);
  void beginRelease(std::optional<time::Duration> cooldown, std::function<void()> done);
  void finishRelease();
  void checkTimeout(time::Duration negotiated);
  void onDeadline();

  Sent sent() const;
  bool current(const Sent& s) const;
  // An answer from the server on this session: S moves to its send time, if the children were
  // read on this connection (a reconnect lost the watch: until read again, our view may be old).
  void confirm(const Sent& s, const std::string& what);
  bool answered(const Sent& s, const ZkResult& r);
  bool leaderAt(time::MonoTime now) const;
  void noteLeadershipChange(std::string detail, bool voluntary = false);
  void emit(election::ElectorEvent::Kind kind, std::string detail, time::Duration latency = {},
            bool voluntary = false);
  // A request failed: said once per distinct problem until ZooKeeper answers again, not every P
  // (a cut-off leader's pings and reads fail in turn).
  void trouble(const std::string& what, const ZkResult& r);
  std::string full(const std::string& name) const { return config_.path + "/" + name; }

  time::Clock& clock_;
  ZkClient& zk_;
  ZkCampaignConfig config_;
  std::function<std::string()> newUuid_;
  const log::Logger* logger_;
  std::function<void(const election::ElectorEvent&)> handler_;
  std::function<bool()> eligible_;
  std::unique_ptr<time::Timer> tickTimer_;  // the leader's ping, a follower's read, retries
  std::unique_ptr<time::Timer> deadlineTimer_;
  std::unique_ptr<time::Timer> cooldownTimer_;
  std::shared_ptr<char> alive_ = std::make_shared<char>();

  bool started_ = false;
  bool stopped_ = false;
  bool releasing_ = false;
  bool connected_ = false;
  bool authFailed_ = false;
  bool pathEnsured_ = false;
  bool joining_ = false;          // ensuring the path, creating or looking for our node
  bool createUncertain_ = false;  // a create (or a delete) of ours got no answer
  bool refreshing_ = false;
  bool refreshAgain_ = false;
  bool pinging_ = false;
  bool reading_ = false;               // the lowest node's data
  std::uint64_t sessionEpoch_ = 0;     // bumped by every new session
  std::uint64_t connectionEpoch_ = 0;  // bumped by every disconnection
  std::uint64_t viewEpoch_ = 0;        // the connection the children were last read on
  std::uint64_t nodeEpoch_ = 0;        // bumped when our node is dropped
  std::uint64_t watchEpoch_ = 0;       // bumped by every watch set or dropped
  std::optional<std::int64_t> sessionId_;
  std::string prefix_;  // <uuid>__lock__, new for every session
  std::optional<Own> own_;
  std::optional<Seen> leader_;
  bool ownIsLowest_ = false;
  std::string watched_;                            // the node our live watch is on ("" none)
  std::optional<time::MonoTime> confirmedSentAt_;  // S, on the current session
  time::WallTime confirmedAt_{};
  bool lastLeader_ = false;
  std::optional<time::WallTime> acquiredAt_;
  std::int64_t acquiredToken_ = 0;
  time::Duration cooldownTime_{};
  std::vector<std::function<void()>> releaseDone_;
  std::set<std::string> troubles_;      // said since the last answer
  std::set<std::string> refusalsSaid_;  // refusals said on this session
  // While ZooKeeper refuses this candidate (kDenied, kAuthFailed, a session timeout too short):
  // shown as Leadership::problem until it is answered again (or a session with enough arrives).
  std::string refusal_;
  std::string shortTimeout_;
  std::set<std::string> foreignSaid_;
};

}  // namespace leasehold::zookeeper
