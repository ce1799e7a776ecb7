#pragma once
// Authenticated access to the Kubernetes API over net::HttpsClient (the ApiTransport the
// sidecar runs on): bearer tokens from a TokenSource (re-read after a 401, one retry), client
// certificates (static or from an exec plugin), the User-Agent, Status bodies parsed into typed
// errors, Retry-After. Never puts a credential into a message.
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
  net::HttpsClient::Request build(const ApiRequest& r);
  void send(ApiRequest request, std::function<void(ApiResponse)> done, bool retriedAfter401);

  cluster::RestConfig config_;
  std::string userAgent_;
  std::unique_ptr<net::HttpsClient> http_;
  std::shared_ptr<const cluster::ClientCertificate> currentCert_;
  std::function<void(const std::string&, int)> observer_;
  std::function<void(const std::string&)> warn_;
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace leasehold::kube
