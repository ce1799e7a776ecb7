#pragma once
// EtcdTransport over etcd's JSON gateway (docs/etcd-gateway.md): POST /v3/<method> on one
// member at a time, through one net::HttpsClient per member (a kept-alive connection each).
//
// Failover: a member that gives no answer (refused, reset, timed out) or says Unavailable (no
// leader, no quorum, stopping) stops being the current one; the next call goes to the next
// member of the list, in order, round. A call that failed so is sent again to the next member,
// within its deadline and at most once per member, when nothing of it can have reached the
// failed one (the connection or TLS handshake failed) or when the call is idempotent.
//
// Authentication (--etcd-user): the first call authenticates (POST /v3/auth/authenticate with
// the password) and every call then carries the token as `Authorization: <token>`. A token
// the cluster no longer knows (Unauthenticated, code 16: it expired, or the member restarted)
// is dropped and the call goes once more after a new authentication. Calls that arrive while
// an authentication runs wait for it; the authentication's deadline is the first waiter's.
// Neither the password nor the token ever reaches a message.
#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "etcd/EtcdTransport.h"
#include "net/HttpsClient.h"
#include "net/TlsOptions.h"
#include "time/Clock.h"

namespace boost::asio {
class io_context;
}

namespace leasehold::net {
class HostResolver;
}

namespace leasehold::etcd {

class EtcdGateway final : public EtcdTransport {
 public:
  struct Credentials {
    std::string user;
    std::string password;
  };
  struct Options {
    std::vector<std::string> endpoints;  // "https://10.0.0.1:2379", "http://127.0.0.1:2379"
    net::TlsOptions tls;                 // the same for every member (etcdctl's --cacert ...)
    std::optional<Credentials> credentials;
    net::HostResolver* resolver = nullptr;  // not owned; must outlive the gateway
  };

  // The clock measures each call's deadline across members.
  EtcdGateway(boost::asio::io_context& io, const time::Clock& clock, Options options);
  ~EtcdGateway() override;
  EtcdGateway(const EtcdGateway&) = delete;
  EtcdGateway& operator=(const EtcdGateway&) = delete;

  // An endpoint URL or the TLS material that cannot work ("--etcd-endpoints: ..."), found at
  // construction; every call then fails.
  const std::optional<std::string>& configurationError() const { return configurationError_; }

  void call(EtcdCall call, std::function<void(EtcdReply)> done) override;
  std::shared_ptr<EtcdWatch> watch(std::string createRequest, EtcdWatchCallbacks callbacks,
                                   std::chrono::milliseconds openDeadline,
                                   std::chrono::milliseconds idleTimeout) override;

  // Whether any member has answered anything yet (/readyz).
  bool answered() const { return answered_; }
  // The member the next call goes to.
  const std::string& currentEndpoint() const { return members_[current_].url; }

  // Fails what is in flight (Cancelled, asynchronously) and refuses later calls.
  void shutdown();

 private:
  struct Member {
    std::string url;
    std::unique_ptr<net::HttpsClient> http;
  };
  struct Operation;
  using TokenReady = std::function<void(std::optional<EtcdReply> failure)>;

  void attempt(std::shared_ptr<Operation> op);
  void send(std::shared_ptr<Operation> op);
  void retryOrFinish(std::shared_ptr<Operation> op, EtcdReply reply, bool nothingSent);
  // Runs `then` once a token is there (at once without credentials or with one).
  void withToken(std::chrono::milliseconds deadline, TokenReady then);
  void authenticated(EtcdReply reply);
  // The member stops being current (if it still is): it gave no answer or cannot serve.
  void failedOver(std::size_t member);
  net::HttpsClient::Request build(const std::string& method, std::string body,
                                  std::chrono::milliseconds deadline) const;
  std::chrono::milliseconds left(time::MonoTime endsAt) const;

  boost::asio::io_context& io_;
  const time::Clock& clock_;
  std::vector<Member> members_;
  std::size_t current_ = 0;
  std::optional<Credentials> credentials_;
  std::optional<std::string> token_;
  bool authenticating_ = false;
  std::deque<TokenReady> waitingForToken_;
  std::optional<std::string> configurationError_;
  bool shutDown_ = false;
  bool answered_ = false;
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace leasehold::etcd
