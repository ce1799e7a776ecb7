#pragma once
// Authenticated access to the Kubernetes API over net::HttpsClient (the ApiTransport the
// sidecar runs on): bearer tokens from a TokenSource (re-read after a 401, one retry), client
// certificates (static or from an exec plugin), the User-Agent, Status bodies parsed into typed
// errors, Retry-After. Never puts a credential into a message.
//
// A request waits for its credential only when the token source has no usable one (an exec
// plugin's first run, or its run after a 401); the wait counts against the request's deadline,
// and a request whose deadline passes first fails as "no answer" (code 0, a transient error).
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "cluster/RestConfig.h"
#include "kube/ApiTransport.h"
#include "net/HostResolver.h"
#include "net/HttpsClient.h"

namespace boost::asio {
class io_context;
}

namespace leasehold::kube {

class ApiClient final : public ApiTransport {
 public:
  // `resolver` looks up the server's host name off the loop (net::WorkerHostResolver); it must
  // outlive the client.
  ApiClient(boost::asio::io_context& io, cluster::RestConfig config, std::string userAgent,
            net::HostResolver& resolver);
  ~ApiClient() override;

  // Every answered or failed request, for metrics: verb and HTTP code (0 = no answer).
  void setRequestObserver(std::function<void(const std::string& verb, int code)> f) {
    observer_ = std::move(f);
  }
  // Warnings from the token source (a failed re-read, a failing exec plugin), for the log.
  void setWarningHandler(std::function<void(const std::string&)> f) { warn_ = std::move(f); }

  void call(ApiRequest request, std::function<void(ApiResponse)> done) override;
  std::shared_ptr<ApiStream> stream(ApiRequest request, ApiStreamCallbacks callbacks,
                                    std::chrono::milliseconds idleTimeout) override;

  const cluster::RestConfig& config() const { return config_; }
  void shutdown();

 private:
  net::HttpsClient::Request build(const ApiRequest& r, std::chrono::milliseconds deadline);
  // Runs `then` once the token source has something to send (at once, usually), with the time
  // left of `deadline`; or with the reason there is nothing to send within it.
  void withCredentials(
      std::chrono::milliseconds deadline,
      std::function<void(std::optional<std::string> problem, std::chrono::milliseconds left)> then);
  void send(ApiRequest request, std::function<void(ApiResponse)> done, bool retriedAfter401);
  std::shared_ptr<net::HttpsClient::StreamHandle> openStream(const ApiRequest& request,
                                                             std::chrono::milliseconds deadline,
                                                             ApiStreamCallbacks cb,
                                                             std::chrono::milliseconds idleTimeout);

  cluster::RestConfig config_;
  std::string userAgent_;
  std::unique_ptr<net::HttpsClient> http_;
  std::shared_ptr<const cluster::ClientCertificate> currentCert_;
  std::function<void(const std::string&, int)> observer_;
  std::function<void(const std::string&)> warn_;
  // Keeps a token source that works on the loop (exec plugin) bound to it; dropped before
  // the io_context goes.
  std::shared_ptr<void> tokenSourceOnLoop_;
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace leasehold::kube
