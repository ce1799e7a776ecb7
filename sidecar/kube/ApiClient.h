#pragma once
// Authenticated access to the Kubernetes API over net::HttpsClient: bearer tokens from a
// TokenSource (re-read after a 401, one retry), client certificates (static or from an exec
// plugin), the User-Agent, Status bodies parsed into typed errors, Retry-After. Never puts a
// credential into a message.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "kube/LeaseCodec.h"
#include "kube/RestConfig.h"
#include "net/HttpsClient.h"

namespace boost::asio {
class io_context;
}

namespace leasehold::kube {

struct ApiResponse {
  int code = 0;  // HTTP status; 0 when no answer arrived (timeout, connection failure)
  std::string body;
  std::optional<ApiStatus> status;  // when the body is a Status
  std::optional<std::chrono::seconds> retryAfter;
  std::string error;  // why there was no answer, or a summary of the failure

  bool ok() const { return code >= 200 && code < 300; }
  // "409 Conflict: Operation cannot be fulfilled ...", "no answer: timed out after 5s".
  std::string describe() const;
};

struct ApiRequest {
  std::string verb;  // for metrics: get, list, watch, create, update, patch
  std::string method;
  std::string path;
  std::string body;
  std::string contentType = "application/json";
  std::chrono::milliseconds deadline{5000};
};

class ApiClient {
 public:
  ApiClient(boost::asio::io_context& io, RestConfig config, std::string userAgent);
  ~ApiClient();

  // Every answered or failed request, for metrics: verb and HTTP code (0 = no answer).
  void setRequestObserver(std::function<void(const std::string& verb, int code)> f) {
    observer_ = std::move(f);
  }
  // Warnings from the token source (a failed re-read, a failing exec plugin), for the log.
  void setWarningHandler(std::function<void(const std::string&)> f) { warn_ = std::move(f); }

  void call(ApiRequest request, std::function<void(ApiResponse)> done);

  struct StreamCallbacks {
    std::function<void()> onOpen;                                            // 2xx headers
    std::function<void(int status, const std::string& errorBody)> onStatus;  // non-2xx ends it
    std::function<void(std::string_view bytes)> onData;                      // 2xx body bytes
    std::function<void(std::optional<std::string> error)> onEnd;
  };
  std::shared_ptr<net::HttpsClient::StreamHandle> stream(ApiRequest request,
                                                         StreamCallbacks callbacks,
                                                         std::chrono::milliseconds idleTimeout);

  const RestConfig& config() const { return config_; }
  void shutdown();

 private:
  net::HttpsClient::Request build(const ApiRequest& r);
  void send(ApiRequest request, std::function<void(ApiResponse)> done, bool retriedAfter401);

  RestConfig config_;
  std::string userAgent_;
  std::unique_ptr<net::HttpsClient> http_;
  std::shared_ptr<const ClientCertificate> currentCert_;
  std::function<void(const std::string&, int)> observer_;
  std::function<void(const std::string&)> warn_;
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace leasehold::kube
