#pragma once
// The production HostResolver: getaddrinfo, a blocking call, as a job on the process's one
// runtime::BlockingWorker, the answer posted back to the loop. A lookup abandoned before it
// starts is skipped, so a closed connection costs no lookup.
//
// The worker also writes the status file, and one slow fsync must not hold up a reconnect
// behind it: once a host has been looked up, later lookups are answered at once with its last
// good answer while a fresh one runs in the background and replaces it (a failed one keeps it).
// A changed address is thus followed one connection later; a DNS outage does not stop
// reconnects to the addresses known.
#include <memory>

#include "net/HostResolver.h"

namespace leasehold::runtime {
class BlockingWorker;
}

namespace leasehold::net {

class WorkerHostResolver final : public HostResolver {
 public:
  // The blocking lookup itself; runs on the worker thread (getAddrInfo in production, a fake
  // in tests).
  using LookUp = std::function<Answer(const std::string& host, std::uint16_t port)>;

  // `worker` must outlive this resolver, and the resolver every client it is given to.
  explicit WorkerHostResolver(runtime::BlockingWorker& worker, LookUp lookUp = getAddrInfo);

  void resolve(const std::string& host, std::uint16_t port, Abandoned abandoned,
               std::function<void(Answer)> done) override;

  // getaddrinfo for a TCP connection with asio's default flags (AI_ADDRCONFIG), the addresses
  // numeric in getaddrinfo's order; the problem is gai_strerror's text. Blocks.
  static Answer getAddrInfo(const std::string& host, std::uint16_t port);

 private:
  struct Known;  // last good answers and the refreshes running; the loop's, shared with results

  runtime::BlockingWorker& worker_;
  LookUp lookUp_;
  std::shared_ptr<Known> known_;
};

}  // namespace leasehold::net
