// The served resources (see Resources.h).
#include "store/Resources.h"

#include "json/KubeObject.h"
#include "store/EventVersions.h"

namespace apiserver {

const ResDef kLeases{"coordination.k8s.io", "v1", "leases", "Lease", "leases"};
const ResDef kCoreEvents{"", "v1", "events", "Event", "events"};
const ResDef kEventsV1{"events.k8s.io", "v1", "events", "Event", "events"};
const ResDef kPods{"", "v1", "pods", "Pod", "pods"};

const ResDef* find_res(const std::string& group, const std::string& version,
                       const std::string& resource) {
  for (const ResDef* r : {&kLeases, &kCoreEvents, &kEventsV1, &kPods})
    if (r->group == group && r->version == version && r->resource == resource) return r;
  return nullptr;
}

bool known_group_version(const std::string& group, const std::string& version) {
  return version == "v1" &&
         (group.empty() || group == "coordination.k8s.io" || group == "events.k8s.io");
}

std::string kind_of(const std::string& collection) {
  return collection == "leases" ? "Lease" : collection == "pods" ? "Pod" : "Event";
}

J versioned(const std::string& collection, const J& o, const std::string& api_version,
            bool with_type) {
  J body = o;
  if (collection == "events" && api_version == "events.k8s.io/v1") body = core_to_v1_event(o);
  if (!with_type) return body;
  return with_kind(body, kind_of(collection), api_version);
}

}  // namespace apiserver
