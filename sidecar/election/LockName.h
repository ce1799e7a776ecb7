#pragma once
// How a lock is named to people, to the app and to the status API, as its store says
// (kube::leaseLockName, etcd::electionLockName): the code above the boundary (/leader's JSON,
// the status file, LEASEHOLD_LEASE) prints it without knowing which store keeps the lock.
#include <string>

namespace leasehold::election {

struct LockName {
  std::string name;  // /leader's "lease": the Lease's name; the etcd election's
  // The one field /leader puts before "lease" to say where the lock lives, and its value:
  // "namespace" and the Lease's namespace; "store" and "etcd".
  std::string scopeField;
  std::string scope;
  // The lock in one string, as an operator names it (LEASEHOLD_LEASE, run mode's log):
  // "NAMESPACE/NAME" for a Lease, the election's name (its key prefix) on etcd.
  std::string qualified;
};

}  // namespace leasehold::election
