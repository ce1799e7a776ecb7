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

#include "election/LeaseRecord.h"

namespace leasehold::kube {

inline constexpr const char* kHolderPodAnnotation = "leasehold.io/holder-pod";
inline constexpr const char* kHolderAddressAnnotation = "leasehold.io/holder-address";
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
  std::optional<election::LeaseRecord> lease;  // ADDED/MODIFIED/DELETED
  std::optional<ApiStatus> status;             // ERROR
};
bool decodeWatchEvent(std::string_view line, WatchEvent& out, std::string& error);

}  // namespace leasehold::kube
