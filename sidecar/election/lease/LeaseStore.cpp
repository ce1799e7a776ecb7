#include "election/lease/LeaseStore.h"

namespace leasehold::election {

const char* toString(StoreStatus s) {
  switch (s) {
    case StoreStatus::kOk:
      return "ok";
    case StoreStatus::kNotFound:
      return "not found";
    case StoreStatus::kConflict:
      return "conflict";
    case StoreStatus::kAlreadyExists:
      return "already exists";
    case StoreStatus::kTransient:
      return "transient error";
    case StoreStatus::kFatal:
      return "fatal error";
  }
  return "unknown";
}

}  // namespace leasehold::election
