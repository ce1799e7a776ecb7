// One open watch as the store sees it: what it watches, how far it has been sent, and the queue
// of event lines the server side writes out (woken through `wake`); and how a watch starts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "store/Selector.h"

namespace apiserver {

struct Watcher {
  std::string collection;  // leases events pods
  std::string ns;
  Selector fields;
  Selector labels;
  std::string api_version;   // for events.k8s.io conversion
  uint64_t start_rv = 0;     // events up to here were sent with the start of the stream
  uint64_t bookmark_rv = 0;  // a bookmark is due once the resource has moved past this RV
  std::string client;
  std::deque<std::string> queue;  // serialised event lines, each ending in '\n'
  size_t queued_bytes = 0;
  bool overflow = false;
  std::function<void()> wake;
};

struct WatchStart {
  std::shared_ptr<Watcher> watcher;  // null: stream ends right after `initial`
  std::string initial;               // lines to send first, in one chunk
  int timeout_seconds = 0;
  bool bookmarks = false;
};

}  // namespace apiserver
