#pragma once
// The JSON of GET /leader, the event stream and the status file (design.md section 3).
#include <string>
#include <utility>

#include "election/Leadership.h"
#include "election/LockName.h"

namespace leasehold::publish {

// The lock as its store names it (kube::leaseLockName, etcd::electionLockName).
using LeaseName = election::LockName;

// {"leader":..,"identity":..,"holder":..,"name":..,"holderAddress":..,"fencingToken":..,
//  "namespace":..,"lease":..,"acquireTime":..,"renewTime":..,"validUntil":..,"problem":..}:
// "namespace" is the lock's scope field, whatever its store calls it (on etcd "store":"etcd",
// with the election's name as "lease").
// name is the holder's pod name when its annotation is known, else the holder identity
// (compatible with the old leader-elector image's {"name": ...}); "" when there is no holder
// (no Lease read yet, a new or released Lease) and when the holder is this replica's identity
// but it does not lead at this instant. holderAddress only when known; fencingToken null before
// any lease was seen; validUntil only when leader; problem only while the store refuses this
// replica's requests (election::Leadership::problem).
std::string leadershipJson(const election::Leadership& l, const LeaseName& lease);

}  // namespace leasehold::publish
