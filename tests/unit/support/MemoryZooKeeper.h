#pragma once
// ZooKeeper in memory behind ZkClient, on the FakeClock: the fake at the ZooKeeper campaign's
// boundary, as MemoryEtcd is the etcd campaign's. One tree (persistent and ephemeral nodes,
// sequence counters per parent from its cversion, czxid/mzxid from one zxid counter), sessions
// that own ephemeral nodes and expire T after the servers last heard of them, exists- and
// child-watches that fire once, and several clients (one per candidate), each with its own
// connection that can be cut alone. Anything it does not model fails the test (ADD_FAILURE).
//
// Time: every answer, watch event and session event of a client arrives through a FakeClock
// timer `latency` after the call (zero: on the next advance() or runDue()), in the order they
// were made (ZooKeeper's FIFO order per session). A request is applied when it is made.
//
// Sessions: a reachable client keeps its session alive (the real client pings by itself every
// T/3: modelled as the servers hearing of it all the time, the latest they could). An
// unreachable client's session, or a destroyed client's (kill -9), expires T after the moment
// it was cut off; its ephemeral nodes go then. A client that becomes reachable again hears
// kConnected (the same session) or, if its session expired meanwhile, kExpired and then
// kConnected of a new session.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "FakeClock.h"
#include "election/ElectionTimings.h"
#include "zookeeper/ZkClient.h"

namespace leasehold::zookeeper::test {

// The timings the ZooKeeper unit tests run with: D = 5 s, R = 3 s, P = 1 s; with L = 1 s, a
// session needs T >= R + L + P = 5 s (MemoryZooKeeper negotiates 6 s unless told).
inline election::ElectionTimings testTimings() {
  using namespace std::chrono_literals;
  election::ElectionTimings t;
  t.leaseDuration = 5s;
  t.renewDeadline = 3s;
  t.retryPeriod = 1s;
  return t;
}
inline time::Duration testServerLag() {
  return std::chrono::seconds(1);
}

class MemoryZooKeeper {
 public:
  class Client;

  explicit MemoryZooKeeper(time::FakeClock& clock);
  ~MemoryZooKeeper();
  MemoryZooKeeper(const MemoryZooKeeper&) = delete;
  MemoryZooKeeper& operator=(const MemoryZooKeeper&) = delete;

  // The session timeout the servers negotiate for new sessions (a client may override it).
  time::Duration sessionTimeout = std::chrono::seconds(6);
  // A request that gets no answer (unreachable, or its answer lost) completes with kUnavailable
  // this long after it was made (the client's request timeout).
  time::Duration requestTimeout = std::chrono::seconds(2);

  // ---- the test's hand on the tree (another client's requests, applied at once) ----
  struct NodeView {
    std::string data;
    ZkStat stat;
  };
  // A session of another client (a kazoo contender) that lives until expireSession().
  std::int64_t openSession();
  // Creates a node as that session would (session 0: persistent); the created path, or "" when
  // ZooKeeper would refuse (and the test fails).
  std::string create(const std::string& path, const std::string& data, ZkCreateMode mode,
                     std::int64_t session = 0);
  void remove(const std::string& path);
  std::optional<NodeView> get(const std::string& path) const;
  std::vector<std::string> children(const std::string& path) const;  // names, sorted
  // The servers expire the session now: its ephemeral nodes go; its client, if reachable,
  // hears kExpired and then the kConnected of a new session.
  void expireSession(std::int64_t id);
  bool sessionAlive(std::int64_t id) const;
  std::int64_t zxid() const { return zxid_; }

  // ---- what happened, over every client ----
  int count(const std::string& op) const;

 private:
  friend class Client;
  struct Node {
    std::string data;
    ZkStat stat;
    std::int32_t cversion = 0;
    std::set<std::string> children;
  };
  struct Session {
    time::Duration timeout{};
    time::MonoTime lastHeard{};
    Client* client = nullptr;  // nullptr: the test's, or its client is gone
    bool testOwned = false;
  };
  struct Watch {
    Client* client;
    std::uint64_t connection;
    std::function<void(const ZkWatchEvent&)> fn;
  };

  ZkCode applyCreate(const std::string& path, const std::string& data, ZkCreateMode mode,
                     std::int64_t session, std::string& created, ZkStat& stat);
  ZkCode applyRemove(const std::string& path, std::int32_t version);
  void fire(std::map<std::string, std::vector<Watch>>& watches, const std::string& path,
            ZkWatchEvent::Kind kind);
  void killSession(std::int64_t id);
  void expire();
  void armExpiry();
  std::int64_t newSession(Client* client, time::Duration timeout);
  void forget(Client* client);

  time::FakeClock& clock_;
  std::map<std::string, Node> nodes_;
  std::int64_t zxid_ = 0x100000000;  // epoch 1, counter 0
  std::int64_t nextSession_ = 0x1000000a2b3c0001;
  std::map<std::int64_t, Session> sessions_;
  std::map<std::string, std::vector<Watch>> existsWatches_;
  std::map<std::string, std::vector<Watch>> childWatches_;
  std::vector<std::string> ops_;
  std::unique_ptr<time::Timer> expiryTimer_;
};

class MemoryZooKeeper::Client final : public ZkClient {
 public:
  explicit Client(MemoryZooKeeper& zk, std::string server = "memory:2181");
  ~Client() override;

  void setSessionHandler(std::function<void(const ZkSessionEvent&)> handler) override {
    handler_ = std::move(handler);
  }
  void open() override;
  void close(std::function<void()> done) override;
  std::optional<std::int64_t> sessionId() const override { return session_; }
  void create(const std::string& path, const std::string& data, ZkCreateMode mode,
              std::function<void(ZkResult, std::string, ZkStat)> done) override;
  void remove(const std::string& path, std::int32_t version,
              std::function<void(ZkResult)> done) override;
  void exists(const std::string& path, std::function<void(const ZkWatchEvent&)> watcher,
              std::function<void(ZkResult, std::optional<ZkStat>)> done) override;
  void getData(const std::string& path,
               std::function<void(ZkResult, std::string, ZkStat)> done) override;
  void getChildren(const std::string& path, std::function<void(const ZkWatchEvent&)> watcher,
                   std::function<void(ZkResult, std::vector<std::string>)> done) override;
  void ping(std::function<void(ZkResult)> done) override;

  // ---- faults ----
  time::Duration latency{};
  // The session timeout this client's sessions get, instead of the servers' default (on a
  // reconnect too: another server may bound it otherwise).
  std::optional<time::Duration> negotiatedTimeout;
  // Cut off (false): kDisconnected, every watch fires kConnectionLost, requests are neither
  // applied nor answered (kUnavailable after the request timeout), and the session expires T
  // later. Back (true): kConnected of the same session, or kExpired and a new one.
  void setReachable(bool reachable);
  bool reachable() const { return reachable_; }
  // The next request (of `op`, or of any with "") gets `result` instead, unapplied.
  void failNext(const std::string& op, ZkResult result);
  // The next request of `op` (on a path containing `pathPart`) is applied but its answer is
  // lost: kUnavailable after the request timeout, then the connection drops and comes back (the
  // same session).
  void loseNextAnswer(const std::string& op, const std::string& pathPart = "");
  // The connection drops (kDisconnected, watches lost, answers in flight lost) and comes back.
  void dropConnection();
  // The server refuses the credentials (the client stops retrying).
  void failAuthentication(const std::string& detail);

  // ---- what happened ----
  std::vector<std::string> ops;            // every request's op, in order
  std::vector<std::string> existsWatches;  // every path an exists-watch was set on, in order
  int childWatches = 0;                    // child watches set
  int count(const std::string& op) const;
  int liveWatches() const;  // watches set by this client that have not fired

 private:
  friend class MemoryZooKeeper;
  // Runs `f` (with whether the connection it was sent on was lost) at `at`, after every earlier
  // delivery of this client.
  void deliver(std::function<void(bool lost)> f, time::Duration after);
  void sessionEvent(ZkSessionEvent e);
  enum class Admit {
    kApply,     // to the servers; its answer comes after `latency` (or is lost)
    kRefuse,    // failNext: `r` after `latency`, unapplied
    kNoAnswer,  // unreachable: `r` (kUnavailable) after the request timeout, unapplied
  };
  Admit admit(const std::string& op, const std::string& path, ZkResult& r, bool& loseAnswer);
  void respond(Admit admit, bool loseAnswer, ZkResult r,
               std::function<void(const ZkResult&)> answer,
               std::function<void(const ZkResult&)> failed);
  ZkResult result(ZkCode code) const;
  ZkResult unanswered() const;
  void connectionLost(bool reconnect);
  void startSession();
  time::Duration renegotiate();
  void expired(const std::string& detail);

  MemoryZooKeeper& zk_;
  std::string server_;
  std::function<void(const ZkSessionEvent&)> handler_;
  std::optional<std::int64_t> session_;
  bool opened_ = false;
  bool closed_ = false;
  bool reachable_ = true;
  bool expiredUnseen_ = false;  // expired while cut off: said when reachable again
  std::uint64_t connection_ = 0;
  time::MonoTime lastDelivery_{};
  std::vector<std::pair<std::string, ZkResult>> failNext_;
  std::vector<std::pair<std::string, std::string>> loseNext_;  // op, part of the path
  std::vector<std::unique_ptr<time::Timer>> pending_;
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace leasehold::zookeeper::test
