// The object store (see Store.h).
#include "store/Store.h"

#include <stdexcept>
#include <utility>

#include "gocompat/GoTime.h"
#include "json/KubeObject.h"
#include "store/RandomIds.h"
#include "store/WatchCache.h"

namespace apiserver {

namespace {

constexpr size_t kMaxEventsStored = 20000;
constexpr size_t kMaxObjects = 100000;

}  // namespace

Collection& Store::coll(const std::string& n) {
  if (n == "leases") return leases;
  if (n == "events") return events;
  return pods;
}

Obj& Store::commit(Collection& c, const std::string& key, J o, std::vector<Managed> managed,
                   std::vector<Path> extra, const Obj* old, bool deleted) {
  (void)deleted;
  J& m = o["metadata"];
  m["resourceVersion"] = std::to_string(++rv);
  if (old) {
    m["uid"] = old->obj["metadata"]["uid"];
    m["creationTimestamp"] = old->obj["metadata"]["creationTimestamp"];
  } else {
    if (!m.contains("uid")) m["uid"] = new_uuid();
    m["creationTimestamp"] = rfc3339_now();
  }
  if (managed.empty())
    m.erase("managedFields");
  else
    m["managedFields"] = render_managed(managed);
  m = canonical_meta(m);
  if (!old && c.name != "events" && c.objs.size() >= kMaxObjects)
    throw std::runtime_error("too many " + c.name + " stored (limit " +
                             std::to_string(kMaxObjects) + ")");
  std::optional<J> prev;
  if (old) prev = old->obj;
  Obj& slot = c.objs[key];
  slot.obj = std::move(o);
  slot.managed = std::move(managed);
  slot.extra = std::move(extra);
  slot.rv = rv;
  record(c, history_cap, old ? "MODIFIED" : "ADDED", key, slot.obj, std::move(prev));
  if (c.name == "events" && c.objs.size() > kMaxEventsStored) {
    // Bounded memory: forget the oldest event (no watch event, like a TTL expiry).
    auto oldest = c.objs.begin();
    for (auto it = c.objs.begin(); it != c.objs.end(); ++it)
      if (it->second.rv < oldest->second.rv) oldest = it;
    if (oldest->first != key) c.objs.erase(oldest);
  }
  return slot;
}

J Store::remove(Collection& c, const std::string& key) {
  auto it = c.objs.find(key);
  J o = it->second.obj;
  J prev = o;
  o["metadata"]["resourceVersion"] = std::to_string(++rv);
  c.objs.erase(it);
  record(c, history_cap, "DELETED", key, o, prev);
  return o;
}

bool Store::sa_exists(const std::string& ns, const std::string& name) const {
  return name == "default" || name == "elector" || service_accounts.count({ns, name});
}

}  // namespace apiserver
