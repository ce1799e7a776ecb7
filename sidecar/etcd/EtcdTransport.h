#pragma once
// What the etcd store needs from an etcd cluster: one unary call and one watch stream, spoken
// to whichever member answers. EtcdGateway implements it over etcd's JSON gateway
// (docs/etcd-gateway.md) with endpoint failover and authentication; tests of the campaign use a
// scripted fake that fails the test on any call it was not told to expect.
//
// Both complete on the event loop, never from inside call() or watch().
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "etcd/EtcdCodec.h"

namespace leasehold::etcd {

struct EtcdCall {
  std::string method;  // the gateway's path after /v3/: "lease/grant", "kv/txn", ...
  std::string body;    // JSON (EtcdCodec); may hold a password: never logged
  // Whether sending it twice is harmless (a range, a keep-alive, a revoke, the campaign's
  // create-unless-exists, which finds its own key the second time): only then is a call that
  // got no answer sent again, to the next member, within its deadline.
  bool idempotent = false;
  // For the whole call: authentication, every member tried, every answer.
  std::chrono::milliseconds deadline{5000};
};

struct EtcdReply {
  enum class Kind {
    kOk,           // the answer (body)
    kUnavailable,  // no answer in time, or the cluster could not serve it now (no leader, no
                   // quorum, a member stopping): worth trying again later
    kDenied,       // authentication failed or the user's role does not allow it
    kRejected,     // any other error answer: the request itself is wrong for this server
  };
  Kind kind = Kind::kUnavailable;
  std::string body;      // kOk: the answer's JSON
  int code = 0;          // an error answer's gRPC code (EtcdCodec's kCode...); 0 otherwise
  std::string message;   // why it failed, for people; never holds a credential
  std::string endpoint;  // the member that answered or failed last

  bool ok() const { return kind == Kind::kOk; }
};

const char* toString(EtcdReply::Kind kind);

struct EtcdWatchCallbacks {
  // Every message of the stream, in order (the first says created, or canceled and why).
  std::function<void(const WatchMessage&)> onMessage;
  // Once, when the stream is over for any reason (no callback runs after it): the member went
  // away, the stream fell idle, a message was malformed, or the server ended it.
  std::function<void(const std::string& why)> onEnd;
};

// An open watch. No callback runs after cancel(); dropping the last reference cancels it.
class EtcdWatch {
 public:
  virtual ~EtcdWatch() = default;
  virtual void cancel() = 0;
  virtual bool active() const = 0;
};

class EtcdTransport {
 public:
  virtual ~EtcdTransport() = default;
  virtual void call(EtcdCall call, std::function<void(EtcdReply)> done) = 0;
  // createRequest: encodeWatchCreate's body. idleTimeout: the stream ends (onEnd) after this
  // long without a byte (etcd sends progress only when asked, so the caller picks it well
  // above the time a watch may be quiet, or 0 for never).
  virtual std::shared_ptr<EtcdWatch> watch(std::string createRequest, EtcdWatchCallbacks callbacks,
                                           std::chrono::milliseconds openDeadline,
                                           std::chrono::milliseconds idleTimeout) = 0;
};

}  // namespace leasehold::etcd
