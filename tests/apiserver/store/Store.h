// The object store: one global resourceVersion counter (the first write gets 2), the Leases,
// Events and Pods collections, and the ServiceAccounts that exist. commit() and remove() stamp
// the server fields and feed the watch cache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "json/Json.h"
#include "store/Collection.h"
#include "store/ManagedFields.h"

namespace apiserver {

class Store {
 public:
  uint64_t rv = 1;
  size_t history_cap = 1000;
  Collection leases{"leases"}, events{"events"}, pods{"pods"};
  // From the --rbac files; "default" and "elector" exist in every namespace.
  std::set<std::pair<std::string, std::string>> service_accounts;

  Collection& coll(const std::string& n);  // "leases", "events", anything else: pods
  const Collection& coll(const std::string& n) const { return const_cast<Store*>(this)->coll(n); }

  // Stamps server fields (resourceVersion, uid, creationTimestamp, managedFields) and stores;
  // publishes a watch event. At most 100000 Leases/Pods (throws), 20000 Events (the oldest is
  // forgotten). Returns the stored object.
  Obj& commit(Collection& c, const std::string& key, J o, std::vector<Managed> managed,
              std::vector<Path> extra, const Obj* old, bool deleted = false);
  // Deletes `key` (which must exist) at a new RV; publishes DELETED. Returns the last state.
  J remove(Collection& c, const std::string& key);

  bool sa_exists(const std::string& ns, const std::string& name) const;
};

}  // namespace apiserver
