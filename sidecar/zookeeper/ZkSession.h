#pragma once
// ZkClient over ZooKeeper's own wire protocol (ZkCodec), on the caller's io_context: one
// connection at a time to one server of the connect string, plain TCP or TLS (a
// secureClientPort), with the session carried from server to server.
//
// A connection: TCP connect (host names through Options::resolver, never asio's resolver,
// which runs a thread), the TLS handshake with verification when Options::tls is set,
// ConnectRequest (the session's id and password, lastZxidSeen), ConnectResponse, then with
// credentials one digest AuthPacket whose answer is awaited; only then kConnected and the
// queued requests go out. All of it must finish within connectTimeout.
//
// Liveness: a ping goes out when nothing was sent for a third of the negotiated timeout; the
// connection is taken for dead when nothing was received for two thirds of it, as ZooKeeper's
// own client does. A request not answered by its deadline completes kUnavailable and drops the
// connection (ZooKeeper answers in order, so everything behind it is stuck too).
//
// A dropped connection: every request sent on it completes kUnavailable, every watch set on it
// fires kConnectionLost, kDisconnected is reported, and the next server is tried with the same
// session; after a whole round of servers failed, the next round waits a backoff that doubles
// up to maxBackoff. A ConnectResponse with timeOut <= 0 says the session expired: kExpired,
// requests still waiting complete kSessionExpired, and a new session is started (kConnected
// with newSession). AuthFailed (-115) is final: kAuthFailed, every request then fails kDenied.
//
// kDisconnected comes once per established connection lost; failed tries before one was
// established report nothing, but requests that time out waiting say why the last try failed.
// close() while connected sends closeSession and ends when it is answered, failed or timed
// out; otherwise it ends the session here (the servers expire it after its timeout).
//
// Error answers: ConnectionLoss, OperationTimeout, SystemError, NewConfigNoQuorum,
// ReconfigInProgress and NotReadOnly are kUnavailable (worth trying again); SessionExpired is
// kSessionExpired; NoAuth and AuthFailed are kDenied; every other code is kRejected. exists'
// NoNode is kOk without a Stat.
//
// Every timer and ZkResult::sentAt come from the injected clock. The password is in no message
// and no log line; neither is the session's own password. Destroying the session drops every
// callback not yet run (nothing runs after the destructor). toString(ZkResult::Kind), declared
// in ZkClient.h, is defined with this class.
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "net/TlsOptions.h"
#include "time/Clock.h"
#include "zookeeper/ZkClient.h"
#include "zookeeper/ZkCodec.h"
#include "zookeeper/ZkConnectString.h"

namespace boost::asio {
class io_context;
namespace ssl {
class context;
}
}  // namespace boost::asio

namespace leasehold::net {
class HostResolver;
}

namespace leasehold::zookeeper {

class ZkConnection;

class ZkSession final : public ZkClient {
 public:
  struct Credentials {
    std::string user;
    std::string password;
  };
  struct Options {
    std::string connectString;
    std::chrono::milliseconds sessionTimeout{10000};  // asked for; the server may change it
    std::chrono::milliseconds requestTimeout{5000};
    // TCP connect + TLS + handshake + authentication, per server tried.
    std::chrono::milliseconds connectTimeout{3000};
    std::chrono::milliseconds initialBackoff{100};
    std::chrono::milliseconds maxBackoff{2000};
    std::optional<net::TlsOptions> tls;  // set: TLS to every server, verified
    std::optional<Credentials> credentials;
    net::HostResolver* resolver = nullptr;  // not owned; IP literals need none
    bool shuffle = true;                    // the servers' order, once, at construction
  };

  ZkSession(boost::asio::io_context& io, time::Clock& clock, Options options);
  ~ZkSession() override;
  ZkSession(const ZkSession&) = delete;
  ZkSession& operator=(const ZkSession&) = delete;

  // The connect string or TLS material that cannot work, found at construction; every request
  // then fails kRejected and open() does nothing.
  const std::optional<std::string>& configurationError() const { return configurationError_; }
  // The server of the current (or last) connection, "host:port".
  std::string currentServer() const;
  std::int64_t lastZxidSeen() const { return lastZxid_; }
  // Whether a server ever established a session for it (/readyz: the store has answered).
  bool answered() const { return answered_; }

  void setSessionHandler(std::function<void(const ZkSessionEvent&)> handler) override;
  void open() override;
  void close(std::function<void()> done) override;
  std::optional<std::int64_t> sessionId() const override;

  void create(const std::string& path, const std::string& data, ZkCreateMode mode,
              std::function<void(ZkResult, std::string createdPath, ZkStat)> done) override;
  void remove(const std::string& path, std::int32_t version,
              std::function<void(ZkResult)> done) override;
  void exists(const std::string& path, std::function<void(const ZkWatchEvent&)> watcher,
              std::function<void(ZkResult, std::optional<ZkStat>)> done) override;
  void getData(const std::string& path,
               std::function<void(ZkResult, std::string data, ZkStat)> done) override;
  void getChildren(const std::string& path, std::function<void(const ZkWatchEvent&)> watcher,
                   std::function<void(ZkResult, std::vector<std::string>)> done) override;
  void ping(std::function<void(ZkResult)> done) override;

 private:
  struct Pending;
  enum class State { kIdle, kConnecting, kConnected, kBackoff, kAuthFailed, kClosed };

  using Watcher = std::function<void(const ZkWatchEvent&)>;

  std::shared_ptr<Pending> makePending(ZkOp op, std::string body);
  void submit(std::shared_ptr<Pending> p);
  void sendQueued();
  void connectNext();
  void onFrame(std::string_view payload);
  void onConnectResponse(std::string_view payload);
  void onAuthAnswer(std::int32_t err);
  void established();
  void onWatchEvent(std::string_view body);
  // Ends the current connection: what was sent on it completes kUnavailable with `why`, its
  // watches fire kConnectionLost, and unless the session is over the next server is tried.
  // serverAnswered: the server took part (an expiry); the next try goes out at once.
  void drop(const std::string& why, bool serverAnswered = false);
  void expired();
  void authFailed();
  void closed();
  void failWaiting(ZkResult::Kind kind, ZkCode code, const std::string& why);
  void armDeadline();
  void onDeadline();
  void armLiveness();
  void onLiveness();
  // Completes p with `result` (its body decoded by p's own completion); a malformed body drops
  // the connection.
  void answer(const std::shared_ptr<Pending>& p, ZkResult result, std::string_view body);
  void fail(const std::shared_ptr<Pending>& p, ZkResult::Kind kind, ZkCode code,
            const std::string& why);
  void later(std::function<void()> f);
  void emit(ZkSessionEvent event);
  std::string withChroot(const std::string& path) const;
  std::string withoutChroot(const std::string& path) const;

  boost::asio::io_context& io_;
  time::Clock& clock_;
  Options options_;
  ZkConnectString target_;
  std::optional<std::string> configurationError_;
  std::shared_ptr<boost::asio::ssl::context> tlsContext_;

  State state_ = State::kIdle;
  std::shared_ptr<ZkConnection> connection_;
  std::size_t next_ = 0;         // the server the next connection goes to
  std::size_t failedInRow_ = 0;  // servers failed since the last good connection
  std::chrono::milliseconds backoff_{0};
  std::string lastFailure_;  // why the last connection ended, for requests that found none

  std::int64_t sessionId_ = 0;
  std::string sessionPasswd_;
  std::int64_t lastZxid_ = 0;
  bool answered_ = false;
  bool newSession_ = false;  // the handshake under way started a session of its own
  std::chrono::milliseconds negotiated_{0};
  time::MonoTime lastSent_{};
  time::MonoTime lastReceived_{};

  std::int32_t nextXid_ = 1;
  std::deque<std::shared_ptr<Pending>> waiting_;  // not sent yet
  std::deque<std::shared_ptr<Pending>> sent_;     // numbered requests, in xid order
  std::deque<std::shared_ptr<Pending>> pings_;    // pings sent (xid -2), in order
  bool awaitingConnectResponse_ = false;
  bool authenticating_ = false;
  bool closing_ = false;  // closeSession is on its way

  // Watches on the current connection: path (with chroot) -> watchers.
  std::multimap<std::string, Watcher> dataWatches_;   // exists and getData: created, deleted, data
  std::multimap<std::string, Watcher> childWatches_;  // getChildren: children, deleted

  std::function<void(const ZkSessionEvent&)> sessionHandler_;
  std::unique_ptr<time::Timer> deadlineTimer_;
  std::unique_ptr<time::Timer> livenessTimer_;
  std::unique_ptr<time::Timer> connectTimer_;
  std::unique_ptr<time::Timer> backoffTimer_;
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace leasehold::zookeeper
