#pragma once
// The JSON of GET /leader, the event stream and the status file (design.md section 3).
#include <string>
#include <utility>

#include "election/Leadership.h"

namespace leasehold::publish {

struct LeaseName {
  LeaseName() = default;
  LeaseName(std::string ns_, std::string name_, std::string store_ = "")
      : ns(std::move(ns_)), name(std::move(name_)), store(std::move(store_)) {}

  std::string ns;
  std::string name;
  std::string store;  // "" for a Kubernetes Lease; "etcd" for an etcd election (name)
};

// {"leader":..,"identity":..,"holder":..,"name":..,"holderAddress":..,"fencingToken":..,
//  "namespace":..,"lease":..,"acquireTime":..,"renewTime":..,"validUntil":..,"problem":..}; on etcd
// "store":"etcd" and the election's name as "lease", in place of "namespace".
// name is the holder's pod name when its annotation is known, else the holder identity
// (compatible with the old leader-elector image's {"name": ...}); "" when there is no holder
// (no Lease read yet, a new or released Lease) and when the holder is this replica's identity
// but it does not lead at this instant. holderAddress only when known; fencingToken null before
// any lease was seen; validUntil only when leader; problem only while the store refuses this
// replica's requests (election::Leadership::problem).
std::string leadershipJson(const election::Leadership& l, const LeaseName& lease);

}  // namespace leasehold::publish
