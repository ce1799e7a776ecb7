// The resources the stand-in serves (coordination.k8s.io/v1 Leases, core/v1 and events.k8s.io/v1
// Events, core/v1 Pods): their names and kinds, and how a stored object is served in an API
// version (core Events are stored, events.k8s.io/v1 ones converted on the way out).
#pragma once

#include <string>

#include "json/Json.h"

namespace apiserver {

struct ResDef {
  std::string group, version, resource, kind, collection;
  std::string api_version() const { return group.empty() ? version : group + "/" + version; }
  std::string qualified() const { return group.empty() ? resource : resource + "." + group; }
  std::string qualified_kind() const { return group.empty() ? kind : kind + "." + group; }
};

extern const ResDef kLeases;
extern const ResDef kCoreEvents;
extern const ResDef kEventsV1;
extern const ResDef kPods;

// The resource at group/version/resource, or null.
const ResDef* find_res(const std::string& group, const std::string& version,
                       const std::string& resource);
bool known_group_version(const std::string& group, const std::string& version);

std::string kind_of(const std::string& collection);  // Lease, Event, Pod
// The object as served by `api_version` (events convert), with kind/apiVersion when with_type.
J versioned(const std::string& collection, const J& o, const std::string& api_version,
            bool with_type);

}  // namespace apiserver
