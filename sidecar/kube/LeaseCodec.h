#pragma once
// The wire form of coordination.k8s.io/v1 Lease objects, LeaseLists, watch events and Status
// bodies, and back. Decoding never throws: a malformed body gives false and a message naming
// the field path. Encoding starts from the object last read so that fields, labels and
// annotations this sidecar does not own survive every write.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "election/lease/LeaseRecord.h"

namespace leasehold::kube {

inline constexpr const char* kHolderPodAnnotation = "leasehold.io/holder-pod";
inline constexpr const char* kHolderAddressAnnotation = "leasehold.io/holder-address";
// "<pod UID>/<container>/<identity>": the holder's process, for --fast-failover's followers
// (kube/HolderExitRule.h). Written with every write of a holder that knows its pod's UID and
// its container's name, removed by every other write, so that it never outlives its holder.
inline constexpr const char* kHolderProcessAnnotation = "leasehold.io/holder-process";
// A handover request on clusters whose API server drops spec.preferredHolder (it keeps it only
// with spec.strategy and the CoordinatedLeaderElection feature gate).
inline constexpr const char* kPreferredHolderAnnotation = "leasehold.io/preferred-holder";

// Kubernetes MicroTime (RFC 3339 with fraction; a numeric offset is normalised to UTC).
std::optional<time::WallTime> parseMicroTime(std::string_view text);

// Who is writing: goes into metadata and the holder annotations.
struct LeaseTarget {
  std::string name;
  std::string ns;
  std::string podName;  // POD_NAME, may be empty
  std::string podIp;    // POD_IP, may be empty
  // Labels every write puts on the Lease (shard mode: the group's, so that one label-selected
  // watch sees all of its Leases); labels already there stay.
  std::vector<std::pair<std::string, std::string>> labels{};
  // --fast-failover: POD_UID (downward API metadata.uid) and LEASEHOLD_CONTAINER (this
  // container's name), written as leasehold.io/holder-process; empty without it.
  std::string podUid{};
  std::string container{};
};

bool decodeLease(std::string_view json, election::LeaseRecord& out, std::string& error);
// Body for POST (no resourceVersion) or PUT (resourceVersion = the CAS condition).
std::string encodeLease(const election::LeaseRecord& record, const LeaseTarget& target,
                        bool forCreate);

struct LeaseListResult {
  std::string resourceVersion;  // the list's, to watch from
  std::optional<election::LeaseRecord> item;
};
bool decodeLeaseList(std::string_view json, const std::string& name, LeaseListResult& out,
                     std::string& error);

// Every item of a LeaseList with its metadata.name (a label-selected list of a shard group).
struct NamedLease {
  std::string name;
  election::LeaseRecord record;
};
bool decodeLeaseListItems(std::string_view json, std::string& resourceVersion,
                          std::vector<NamedLease>& out, std::string& error);

// A Status body (errors and watch ERROR events).
struct ApiStatus {
  int code = 0;
  std::string reason;
  std::string message;
};
// False when the body is not a Status (e.g. the plain-text 429 body).
bool decodeStatus(std::string_view json, ApiStatus& out);

struct WatchEvent {
  enum class Type { kAdded, kModified, kDeleted, kBookmark, kError };
  Type type = Type::kAdded;
  std::string resourceVersion;                 // of the object (or bookmark)
  std::string name;                            // of the object (metadata.name)
  std::optional<election::LeaseRecord> lease;  // ADDED/MODIFIED/DELETED of a Lease watch
  std::string object;                          // ADDED/MODIFIED/DELETED of any other watch
  std::optional<ApiStatus> status;             // ERROR
};
// What a watch's objects are: Leases (decoded into `lease`) or anything else (kept as JSON text
// in `object`, for the owner to decode: a pod watch).
enum class WatchObjects { kLeases, kOther };
bool decodeWatchEvent(std::string_view line, WatchEvent& out, std::string& error,
                      WatchObjects objects = WatchObjects::kLeases);

}  // namespace leasehold::kube
