#pragma once
// The JSON of GET /leader, the event stream and the status file (design.md section 3).
#include <string>

#include "election/Leadership.h"

namespace leasehold::publish {

struct LeaseName {
  std::string ns;
  std::string name;
};

// {"leader":..,"identity":..,"holder":..,"name":..,"holderAddress":..,"fencingToken":..,
//  "namespace":..,"lease":..,"acquireTime":..,"renewTime":..,"validUntil":..}
// name is the holder's pod name when its annotation is known, else the holder identity
// (compatible with the old leader-elector image's {"name": ...}); "" when there is no holder
// (no Lease read yet, a new or released Lease) and when the holder is this replica's identity
// but it does not lead at this instant. holderAddress only when known; fencingToken null before
// any lease was seen; validUntil only when leader.
std::string leadershipJson(const election::Leadership& l, const LeaseName& lease);

}  // namespace leasehold::publish
