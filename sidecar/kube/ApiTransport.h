#pragma once
// What the API objects (LeaseClient, LeaseWatch, EventRecorder, PodLabeler) need from the
// Kubernetes API: one unary call and one stream. ApiClient implements it over HTTPS with
// credentials; tests use FakeApiClient (tests/unit/support), which answers scripted requests
// and fails the test on any other, like client-go's fake clientset with its catch-all reactor.
//
// Both complete on the event loop, never from inside call() or stream().
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "kube/LeaseCodec.h"

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
  std::string path;  // with the query, if any
  std::string body;
  std::string contentType = "application/json";
  std::chrono::milliseconds deadline{5000};
};

struct ApiStreamCallbacks {
  std::function<void()> onOpen;                                            // 2xx headers
  std::function<void(int status, const std::string& errorBody)> onStatus;  // non-2xx ends it
  std::function<void(std::string_view bytes)> onData;                      // 2xx body bytes
  std::function<void(std::optional<std::string> error)> onEnd;  // after a 2xx; nullopt: clean
};

// An open stream. No callback runs after cancel(); dropping the last reference cancels it.
class ApiStream {
 public:
  virtual ~ApiStream() = default;
  virtual void cancel() = 0;
  // True until the stream ended (onStatus or onEnd delivered) or cancel() was called.
  virtual bool active() const = 0;
};

class ApiTransport {
 public:
  virtual ~ApiTransport() = default;
  virtual void call(ApiRequest request, std::function<void(ApiResponse)> done) = 0;
  // idleTimeout: the stream ends with an error after this long without a byte.
  virtual std::shared_ptr<ApiStream> stream(ApiRequest request, ApiStreamCallbacks callbacks,
                                            std::chrono::milliseconds idleTimeout) = 0;
};

}  // namespace leasehold::kube
