#pragma once
// An etcd election's name as the status API and LEASEHOLD_LEASE give it (election::LockName):
// "store":"etcd" beside "lease" in /leader, and the election's name alone in one string (etcd
// has no namespace).
#include <string>

#include "election/LockName.h"

namespace leasehold::etcd {

inline election::LockName electionLockName(const std::string& election) {
  return {election, "store", "etcd", election};
}

}  // namespace leasehold::etcd
