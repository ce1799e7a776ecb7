#pragma once
// What the ZooKeeper store needs from a ZooKeeper ensemble: one session and the handful of
// operations the election recipe uses (docs/design.md, "The ZooKeeper store"). ZkSession
// implements it over ZooKeeper's own wire protocol (jute over TCP, or TLS to a
// secureClientPort) on the event loop, with failover between the connect string's servers;
// tests of the campaign use MemoryZooKeeper, several sessions on one in-memory tree on the
// FakeClock, which fails the test on anything it does not model.
//
// Contract:
// - Every completion runs on the event loop, never inside the call, exactly once (unless the
//   client is destroyed first: then callbacks are dropped).
// - Requests go out in the order they are made and are answered in that order (ZooKeeper's
//   FIFO order per session); each has a deadline (the session's request timeout), after which
//   it completes with kUnavailable and the connection is dropped (the session is kept: the
//   client reconnects to the next server with it).
// - ZkResult::sentAt is when the request was handed to the connection, on the injected
//   monotonic clock: an answered request proves the session was alive on that server after
//   sentAt, the claim rule's S.
// - Paths are absolute within the chroot of the connect string (the client adds and strips
//   the chroot); the campaign never sees it.
// - A watch fires at most once: with the server's event, or with kConnectionLost when the
//   connection it was set on went away (the client does not re-register watches after a
//   reconnect; the watcher reads again, which is what it would do after any event).
// - Session events (below) say when the session is usable, when a connection dropped (the
//   session may still be alive on the servers) and when the servers said it expired (every
//   ephemeral node of it is gone; the client then starts a new session by itself).
// - The client pings by itself when nothing was sent for a third of the negotiated timeout,
//   so that an idle session lives; the recipe's own requests (and pings) are its claim's
//   evidence, read from their results.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "time/Time.h"

namespace leasehold::zookeeper {

// ZooKeeper's error codes (KeeperException.Code) that the recipe tells apart.
enum class ZkCode : int {
  kOk = 0,
  kConnectionLoss = -4,
  kMarshallingError = -5,
  kOperationTimeout = -7,
  kBadArguments = -8,
  kNoNode = -101,
  kNoAuth = -102,
  kBadVersion = -103,
  kNoChildrenForEphemerals = -108,
  kNodeExists = -110,
  kNotEmpty = -111,
  kSessionExpired = -112,
  kInvalidAcl = -114,
  kAuthFailed = -115,
  kSessionMoved = -118,
};

struct ZkResult {
  enum class Kind {
    kOk,              // answered with code 0
    kUnavailable,     // no answer in time, the connection dropped, or no server can serve
                      // (no quorum): worth trying again
    kSessionExpired,  // the servers ended this session: its ephemeral nodes are gone
    kDenied,          // NoAuth or AuthFailed: the credentials or the node's ACL
    kRejected,        // any other error answer (code says which: NoNode, NodeExists, ...)
  };
  Kind kind = Kind::kUnavailable;
  ZkCode code = ZkCode::kConnectionLoss;  // the server's code when it answered
  std::string message;                    // why, for people; never holds a credential
  std::string server;                     // host:port that answered or failed
  time::MonoTime sentAt{};

  bool ok() const { return kind == Kind::kOk; }
  bool is(ZkCode c) const { return kind != Kind::kUnavailable && code == c; }
};

const char* toString(ZkResult::Kind kind);

// The parts of a znode's Stat the recipe reads.
struct ZkStat {
  std::int64_t czxid = 0;  // the transaction that created it: the fencing token of a term
  std::int64_t mzxid = 0;
  std::int32_t version = 0;
  std::int64_t ephemeralOwner = 0;  // the owning session's id, 0 for a persistent node
  std::int32_t numChildren = 0;
};

enum class ZkCreateMode { kPersistent, kEphemeral, kEphemeralSequential, kContainer };

struct ZkWatchEvent {
  enum class Kind { kCreated, kDeleted, kDataChanged, kChildrenChanged, kConnectionLost };
  Kind kind = Kind::kConnectionLost;
  std::string path;
};

struct ZkSessionEvent {
  enum class Kind {
    kConnected,     // a session is established (new) or re-established (same id) on a server
    kDisconnected,  // the connection dropped, or a whole round of servers failed to give one;
                    // the client is trying the next server
    kExpired,       // the servers said the session expired; a new one is being started
    kAuthFailed,    // the server refused the credentials (the client stops retrying)
  };
  Kind kind = Kind::kDisconnected;
  std::int64_t sessionId = 0;
  bool newSession = false;             // kConnected: not the session we had before
  time::Duration negotiatedTimeout{};  // kConnected: the server's session timeout
  std::string server;                  // host:port
  std::string detail;                  // why, for the log
};

class ZkClient {
 public:
  virtual ~ZkClient() = default;

  virtual void setSessionHandler(std::function<void(const ZkSessionEvent&)> handler) = 0;
  // Connects and starts a session (kConnected when done). Requests made before it is
  // connected wait for the connection (within their deadline).
  virtual void open() = 0;
  // Ends the session on the server (closeSession: its ephemeral nodes go at once) and closes
  // the connection; done runs when answered, failed or timed out.
  virtual void close(std::function<void()> done) = 0;
  // The current session's id, once there is one.
  virtual std::optional<std::int64_t> sessionId() const = 0;

  // create2: the created path (with its sequence suffix) and its Stat. The ACL is the
  // session's (ZkSession's options: open, or creator-only with digest credentials).
  virtual void create(const std::string& path, const std::string& data, ZkCreateMode mode,
                      std::function<void(ZkResult, std::string createdPath, ZkStat)> done) = 0;
  // version -1: any.
  virtual void remove(const std::string& path, std::int32_t version,
                      std::function<void(ZkResult)> done) = 0;
  // The Stat if the node exists (kOk), nullopt with kOk if it does not. With a watcher, a
  // watch is left on the path (existing or not) that fires once.
  virtual void exists(const std::string& path, std::function<void(const ZkWatchEvent&)> watcher,
                      std::function<void(ZkResult, std::optional<ZkStat>)> done) = 0;
  virtual void getData(const std::string& path,
                       std::function<void(ZkResult, std::string data, ZkStat)> done) = 0;
  // The children's names (not paths), in the server's order; with a watcher, a child watch.
  virtual void getChildren(const std::string& path,
                           std::function<void(const ZkWatchEvent&)> watcher,
                           std::function<void(ZkResult, std::vector<std::string>)> done) = 0;
  // A ping: the cheapest request that the server answers on this session.
  virtual void ping(std::function<void(ZkResult)> done) = 0;
};

}  // namespace leasehold::zookeeper
