#pragma once
// Shared by the fuzz targets: a property check that libFuzzer reports as a crash (abort) with a
// message, and the Lease round trip used by the JSON targets.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "election/lease/LeaseRecord.h"
#include "kube/LeaseCodec.h"

namespace leasehold::fuzz {

[[noreturn]] inline void propertyFailed(const char* file, int line, const char* what,
                                        const std::string& detail) {
  std::fprintf(stderr, "\n%s:%d: property violated: %s\n%s\n", file, line, what, detail.c_str());
  std::abort();
}

#define FUZZ_CHECK(condition, detail)                                                              \
  do {                                                                                             \
    if (!(condition)) ::leasehold::fuzz::propertyFailed(__FILE__, __LINE__, #condition, (detail)); \
  } while (0)

inline std::string describe(const election::LeaseRecord& r) {
  std::string s = "holder=\"" + r.holderIdentity + "\" duration=";
  s += r.leaseDurationSeconds ? std::to_string(*r.leaseDurationSeconds) : "none";
  s += " acquire=";
  s += r.acquireTime ? time::formatMicroTime(*r.acquireTime) : "none";
  s += " renew=";
  s += r.renewTime ? time::formatMicroTime(*r.renewTime) : "none";
  s += " transitions=" + std::to_string(r.leaseTransitions);
  s += " rv=\"" + r.resourceVersion.value + "\"";
  return s;
}

// A record that decoded must survive encodeLease -> decodeLease with the same spec (what the
// election wrote is what the next read sees), for both POST and PUT bodies, and encoding must be
// stable (encoding the re-decoded record gives the same bytes).
inline void checkLeaseRoundTrip(const election::LeaseRecord& record) {
  const kube::LeaseTarget target{"lease-a", "golden", "web-0", "10.1.2.3"};
  for (const bool forCreate : {false, true}) {
    const std::string body = kube::encodeLease(record, target, forCreate);
    election::LeaseRecord again;
    std::string error;
    FUZZ_CHECK(kube::decodeLease(body, again, error),
               "encodeLease produced a body decodeLease rejects: " + error +
                   "\nrecord: " + describe(record) + "\nbody: " + body);
    FUZZ_CHECK(again.sameSpec(record),
               "spec changed in the round trip\nbefore: " + describe(record) +
                   "\nafter:  " + describe(again) + "\nbody: " + body);
    if (forCreate) {
      FUZZ_CHECK(again.resourceVersion.empty(), "a create body carries a resourceVersion: " + body);
    } else {
      FUZZ_CHECK(again.resourceVersion == record.resourceVersion,
                 "resourceVersion changed: " + body);
    }
    if (record.holderIdentity.empty()) {
      FUZZ_CHECK(again.holderPod.empty() && again.holderAddress.empty(),
                 "a released lease keeps holder annotations: " + body);
    } else {
      FUZZ_CHECK(again.holderPod == target.podName && again.holderAddress == target.podIp,
                 "holder annotations not written: " + body);
    }
    const std::string twice = kube::encodeLease(again, target, forCreate);
    FUZZ_CHECK(twice == body, "encoding is not stable\nfirst:  " + body + "\nsecond: " + twice);
  }
}

}  // namespace leasehold::fuzz
