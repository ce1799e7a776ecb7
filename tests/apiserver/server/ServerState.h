// What the server side holds beside the Api: per-client request counters, fault rules, the
// global latency, partitioned clients and the open connections (so that the control API can
// close or cut them). One io_context thread uses it; nothing here is locked.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "Api.h"
#include "faults/FaultRules.h"

namespace apiserver {

// One API connection as the control API sees it.
struct Connection {
  std::string client;
  bool watching = false;
  bool hung = false;
  bool cut = false;
  bool cut_clean = false;
  std::function<void()> close;  // closes the socket
  std::function<void()> wake;   // wakes a watch loop
};

struct ServerState {
  Api api;
  std::map<std::string, std::map<std::string, uint64_t>> counters, counters_by_resource;
  FaultRules faults;
  int global_latency_ms = 0;
  std::set<std::string> partitioned;
  std::vector<std::weak_ptr<Connection>> conns;

  // Calls f on every open connection (and forgets the closed ones).
  void each_conn(const std::function<void(Connection&)>& f) {
    for (auto it = conns.begin(); it != conns.end();) {
      if (auto c = it->lock()) {
        f(*c);
        ++it;
      } else {
        it = conns.erase(it);
      }
    }
  }
};

}  // namespace apiserver
