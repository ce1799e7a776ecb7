#pragma once
// How HttpsClient turns the API server's host name into addresses: without blocking the loop and
// without a thread of its own (asio's async_resolve runs getaddrinfo on a private thread, one
// more than the sidecar may have). Production passes WorkerHostResolver (getaddrinfo on the
// runtime::BlockingWorker); tests may script answers.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace leasehold::net {

class HostResolver {
 public:
  struct Answer {
    std::vector<std::string> addresses;  // numeric ("127.0.0.1", "::1"), in the order to try
    std::optional<std::string> problem;  // why there are none ("Name or service not known")
  };
  // Set (by the caller, on the loop) once nobody wants the answer any more, e.g. the connection
  // closed: a lookup that has not started by then is skipped.
  using Abandoned = std::shared_ptr<const std::atomic<bool>>;

  virtual ~HostResolver() = default;

  // Looks `host` (a name, not an IP literal) up for TCP port `port`. `done` runs later on the
  // loop, never inside resolve(), at most once: exactly once unless the resolver goes away
  // first. After *abandoned became true, done may get a problem without a lookup having run.
  virtual void resolve(const std::string& host, std::uint16_t port, Abandoned abandoned,
                       std::function<void(Answer)> done) = 0;
};

}  // namespace leasehold::net
