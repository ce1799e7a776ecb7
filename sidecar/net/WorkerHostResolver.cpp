#include "net/WorkerHostResolver.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <utility>

#include "runtime/BlockingWorker.h"

namespace leasehold::net {

struct WorkerHostResolver::Known {
  using Key = std::pair<std::string, std::uint16_t>;
  std::map<Key, Answer> answers;  // only answers with addresses
  std::set<Key> refreshing;
};

WorkerHostResolver::WorkerHostResolver(runtime::BlockingWorker& worker, LookUp lookUp)
    : worker_(worker), lookUp_(std::move(lookUp)), known_(std::make_shared<Known>()) {}

void WorkerHostResolver::resolve(const std::string& host, std::uint16_t port, Abandoned abandoned,
                                 std::function<void(Answer)> done) {
  Known::Key key{host, port};
  // The jobs hold copies only (the lookup function, the host, the flag): they may run after the
  // caller, and this resolver, are gone. The results hold the Known state, on the loop.
  auto job = [lookUp = lookUp_, host, port](Abandoned skipIf) {
    return [lookUp, host, port, skipIf = std::move(skipIf)] {
      if (skipIf && skipIf->load()) return Answer{{}, "lookup abandoned"};
      return lookUp(host, port);
    };
  };
  const auto last = known_->answers.find(key);
  if (last == known_->answers.end()) {
    worker_.run(job(std::move(abandoned)),
                [known = known_, key, done = std::move(done)](Answer answer) {
                  if (!answer.problem) known->answers[key] = answer;
                  done(std::move(answer));
                });
    return;
  }
  worker_.post([answer = last->second, done = std::move(done)]() mutable { done(answer); });
  if (!known_->refreshing.insert(key).second) return;  // one refresh at a time per host
  worker_.run(job(nullptr), [known = known_, key](Answer answer) {
    known->refreshing.erase(key);
    if (!answer.problem) known->answers[key] = std::move(answer);
  });
}

HostResolver::Answer WorkerHostResolver::getAddrInfo(const std::string& host, std::uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_protocol = IPPROTO_TCP;
  hints.ai_flags = AI_ADDRCONFIG | AI_NUMERICSERV;
  addrinfo* list = nullptr;
  const std::string service = std::to_string(port);
  const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &list);
  if (rc == EAI_SYSTEM) return Answer{{}, std::string(std::strerror(errno))};
  if (rc != 0) return Answer{{}, std::string(::gai_strerror(rc))};
  Answer answer;
  for (const addrinfo* entry = list; entry != nullptr; entry = entry->ai_next) {
    char numeric[NI_MAXHOST];
    if (::getnameinfo(entry->ai_addr, entry->ai_addrlen, numeric, sizeof numeric, nullptr, 0,
                      NI_NUMERICHOST) == 0) {
      answer.addresses.emplace_back(numeric);
    }
  }
  ::freeaddrinfo(list);
  if (answer.addresses.empty()) answer.problem = "no usable address";
  return answer;
}

}  // namespace leasehold::net
