// One resource's objects in the store ("ns/name" -> object), with its watch history window and
// open watchers (WatchCache.h works on those).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "json/Json.h"
#include "store/ManagedFields.h"
#include "store/Watcher.h"

namespace apiserver {

struct Obj {
  J obj;  // without kind/apiVersion
  std::vector<Managed> managed;
  std::vector<Path> extra;  // pods: spec leaves owned by the creator
  uint64_t rv = 0;
};

struct HistEvent {
  uint64_t rv;
  std::string type;
  std::string key;
  J obj;
  std::optional<J> prev;
};

struct Collection {
  explicit Collection(std::string n) : name(std::move(n)) {}
  std::string name;
  std::map<std::string, Obj> objs;  // "ns/name"
  std::deque<HistEvent> history;
  uint64_t start_rv = 1;
  uint64_t last_rv = 1;
  std::vector<std::weak_ptr<Watcher>> watchers;
};

}  // namespace apiserver
