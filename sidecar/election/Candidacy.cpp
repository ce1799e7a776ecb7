#include "election/Candidacy.h"

namespace leasehold::election {

const char* toString(ElectorEvent::Kind k) {
  switch (k) {
    case ElectorEvent::Kind::kAcquired:
      return "acquired";
    case ElectorEvent::Kind::kRenewed:
      return "renewed";
    case ElectorEvent::Kind::kRenewFailed:
      return "renewal failed";
    case ElectorEvent::Kind::kSteppedDown:
      return "stepped down";
    case ElectorEvent::Kind::kNewLeaderObserved:
      return "new leader observed";
    case ElectorEvent::Kind::kReleased:
      return "released";
    case ElectorEvent::Kind::kHandoverRequested:
      return "handover-requested";
    case ElectorEvent::Kind::kObserved:
      return "observed";
    case ElectorEvent::Kind::kStoreFailed:
      return "store request failed";
  }
  return "unknown";
}

}  // namespace leasehold::election
