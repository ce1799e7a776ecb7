#pragma once
// A ZooKeeper election's name as the status API and LEASEHOLD_LEASE give it
// (election::LockName): "store":"zookeeper" beside "lease" in /leader, where "lease" is the
// election's name (--lease-name, the path /NAME under the connect string's chroot).
#include <string>

#include "election/LockName.h"

namespace leasehold::zookeeper {

inline election::LockName znodeLockName(const std::string& name) {
  return {name, "store", "zookeeper", name};
}

}  // namespace leasehold::zookeeper
