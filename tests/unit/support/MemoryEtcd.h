#pragma once
// etcd v3 in memory behind EtcdTransport, on the FakeClock: the fake at the etcd campaign's
// boundary, as MemoryLeaseStore is the Lease's. It speaks the gateway's JSON (the bodies
// EtcdCodec writes and the answers it reads, with etcd's quirks: int64s as strings, zero values
// left out), keeps revisions, leases that expire TTL after their grant or last keep-alive (and
// take their keys with them), and watches that replay from a revision. A method it does not
// model fails the test.
//
// Every answer and watch message arrives through a FakeClock timer `latency` after the call
// (zero: on the next advance() or runDue()); a request is applied when it is made, so a lost
// answer (loseAnswers) leaves its effect behind, as on a real network.
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
#include "etcd/EtcdTransport.h"

namespace leasehold::etcd::test {

// The timings the etcd unit tests run with: D = 5 s (a whole-second TTL), R = 3 s, P = 1 s.
inline election::ElectionTimings testTimings() {
  using namespace std::chrono_literals;
  election::ElectionTimings t;
  t.leaseDuration = 5s;
  t.renewDeadline = 3s;
  t.retryPeriod = 1s;
  return t;
}

class MemoryEtcd final : public EtcdTransport {
 public:
  explicit MemoryEtcd(time::FakeClock& clock);
  ~MemoryEtcd() override;

  void call(EtcdCall call, std::function<void(EtcdReply)> done) override;
  std::shared_ptr<EtcdWatch> watch(std::string createRequest, EtcdWatchCallbacks callbacks,
                                   std::chrono::milliseconds openDeadline,
                                   std::chrono::milliseconds idleTimeout) override;

  // ---- the test's hand on the store (another client's requests, applied at once) ----
  Revision put(const std::string& key, const std::string& value, LeaseId lease = 0);
  void remove(const std::string& key);
  std::optional<KeyValue> get(const std::string& key) const;
  std::vector<KeyValue> keysUnder(const std::string& prefix) const;  // by create revision
  Revision revision() const { return revision_; }
  bool leaseAlive(LeaseId id) const { return leases_.count(id) != 0; }
  // Ends every open watch (the member went away); later watches open normally.
  void endWatches(const std::string& why);
  // The open watches stay open but say nothing more (a member cut off without a reset: no
  // stream ends); later watches work.
  void freezeWatches();

  // One client's own path to the store, which can be cut alone (a partition of that client):
  // while cut, its calls are not applied and answer kUnavailable, and its watches end.
  class Link : public EtcdTransport {
   public:
    explicit Link(MemoryEtcd& etcd) : etcd_(etcd) {}
    void call(EtcdCall call, std::function<void(EtcdReply)> done) override;
    std::shared_ptr<EtcdWatch> watch(std::string createRequest, EtcdWatchCallbacks callbacks,
                                     std::chrono::milliseconds openDeadline,
                                     std::chrono::milliseconds idleTimeout) override;
    void setReachable(bool reachable);
    bool reachable() const { return reachable_; }

   private:
    MemoryEtcd& etcd_;
    bool reachable_ = true;
    std::vector<std::weak_ptr<EtcdWatch>> watches_;
  };

  // ---- raft ----
  // The term in every answer's header (etcd's raft_term: the term of the last entry the
  // answering member applied). A test raises it for an election.
  std::uint64_t raftTerm = 3;
  // A raft leader that lost its term while paused (docs/design.md, "The etcd store"): every
  // keep-alive is answered by it, with the lease's TTL and this term in the header, and is not
  // applied (the real leader never sees it). Everything else is answered by the real leader.
  std::optional<std::uint64_t> staleKeepAliveTerm;

  // ---- faults ----
  time::Duration latency{};
  // Unreachable: calls are not applied and answer kUnavailable after `latency`; watches end.
  void setReachable(bool reachable);
  // Calls are applied, but their answers are lost (kUnavailable): the member went away after.
  bool loseAnswers = false;
  // The next call of `method` gets `reply` instead, unapplied.
  void failNext(const std::string& method, EtcdReply reply);

  // ---- what happened ----
  // Every call's method, in order; a count-only range (a keep-alive's confirming read) is
  // "kv/range count_only".
  std::vector<std::string> methods;
  std::vector<std::string> countedKeys;  // the key of every count-only range, in order
  int count(const std::string& method) const;
  int openWatches() const;

 private:
  struct Lease {
    std::int64_t ttlSeconds;
    time::MonoTime expiresAt;
  };
  struct Event {
    Revision revision;
    bool deleted;
    KeyValue kv;
  };
  struct Watcher;

  std::string apply(const std::string& method, const std::string& body, EtcdReply& reply);
  std::string header() const;
  std::string header(std::uint64_t term) const;
  void deleteKey(const std::string& key);
  void dropLease(LeaseId id);
  void record(Event e);
  void expire();
  void armExpiry();
  void deliver(std::function<void()> f);
  void refuse(std::function<void(EtcdReply)> done);
  std::shared_ptr<EtcdWatch> refusedWatch(EtcdWatchCallbacks callbacks);
  void pump(Watcher& w);

  time::FakeClock& clock_;
  Revision revision_ = 1;
  LeaseId nextLease_ = 0x694d7a3f2c1b0000;
  std::map<std::string, KeyValue> kvs_;
  std::map<LeaseId, Lease> leases_;
  std::vector<Event> history_;
  std::vector<std::shared_ptr<Watcher>> watchers_;
  std::map<std::string, std::vector<EtcdReply>> failNext_;
  bool reachable_ = true;
  std::unique_ptr<time::Timer> expiryTimer_;
  // Answers waiting for their time: each owns its timer.
  std::vector<std::unique_ptr<time::Timer>> pending_;
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace leasehold::etcd::test
