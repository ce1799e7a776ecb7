#pragma once
// The JSON of etcd v3's gateway (docs/etcd-gateway.md), both ways, with no I/O: the bodies the
// etcd store POSTs to /v3/... and what it reads back. Keys and values are bytes, base64 on the
// wire; int64 fields travel as strings (numbers are accepted too); a field at its zero value is
// left out of an answer. Decoding never throws: a malformed body gives false and a message
// naming the field.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace leasehold::etcd {

using Revision = std::int64_t;
using LeaseId = std::int64_t;

struct KeyValue {
  std::string key;
  std::string value;
  Revision createRevision = 0;
  Revision modRevision = 0;
  std::int64_t version = 0;
  LeaseId lease = 0;  // 0: the key is not attached to a lease
  bool operator==(const KeyValue&) const = default;
};

struct ResponseHeader {
  Revision revision = 0;  // the store's revision when the request was served
  std::uint64_t memberId = 0;
  std::uint64_t raftTerm = 0;
};

// An error answer, {"code": <gRPC status code>, "message": ...}; a stream's error message
// ({"error": {"grpc_code", "message"}}) decodes to the same.
struct GatewayError {
  int code = 0;
  std::string message;
};
// gRPC status codes the store tells apart.
inline constexpr int kCodeInvalidArgument = 3;
inline constexpr int kCodeDeadlineExceeded = 4;
inline constexpr int kCodeNotFound = 5;
inline constexpr int kCodePermissionDenied = 7;
inline constexpr int kCodeUnavailable = 14;
inline constexpr int kCodeUnauthenticated = 16;
// False when the body is not an error answer.
bool decodeGatewayError(std::string_view json, GatewayError& out);

// ---- requests ----------------------------------------------------------------------------

// auth/authenticate. The password is in the body only: never log a request body.
std::string encodeAuthenticate(const std::string& user, const std::string& password);
// lease/grant.
std::string encodeLeaseGrant(std::int64_t ttlSeconds);
// lease/keepalive (one request per POST), lease/revoke.
std::string encodeLeaseId(LeaseId id);
// kv/txn: puts key = value attached to `lease` unless the key exists; either way the answer
// holds the key (decodeCreateUnlessExists). The campaign's first step, as etcd's election does.
std::string encodeCreateUnlessExists(const std::string& key, const std::string& value,
                                     LeaseId lease);
// kv/range over every key under `prefix`, oldest first (by create revision), at most `limit`
// (0: all); with createdBefore, only keys created before that revision: the newest of them is a
// candidate's predecessor (limit 1, newest first).
std::string encodeRangeByCreation(const std::string& prefix, std::int64_t limit, bool newestFirst,
                                  std::optional<Revision> createdBefore);
// kv/range that counts one key (count_only), linearizable (no `serializable`): etcd answers it
// only after a ReadIndex, which the raft leader confirms with a quorum at its own term. The
// campaign's confirmation of a keep-alive (EtcdCampaign.h); what it reads does not matter.
std::string encodeLinearizableCount(const std::string& key);
// kv/deleterange of one key.
std::string encodeDeleteKey(const std::string& key);
// watch: one key (or, with prefix, every key under it) from `fromRevision` (0: from now).
std::string encodeWatchCreate(const std::string& key, bool prefix, Revision fromRevision);

// The end of the range of keys that start with `prefix` (etcd's range_end): the prefix with
// its last byte below 0xff incremented and what follows cut off; "\0" (everything) when there
// is none.
std::string prefixEnd(const std::string& prefix);

// ---- answers -----------------------------------------------------------------------------

bool decodeAuthenticate(std::string_view json, std::string& token, std::string& error);

struct LeaseGrant {
  ResponseHeader header;
  LeaseId id = 0;
  std::int64_t ttlSeconds = 0;
};
bool decodeLeaseGrant(std::string_view json, LeaseGrant& out, std::string& error);

// A keep-alive's answer; ttlSeconds 0 (left out) means the lease no longer exists.
struct KeepAlive {
  ResponseHeader header;
  LeaseId id = 0;
  std::int64_t ttlSeconds = 0;
};
bool decodeKeepAlive(std::string_view json, KeepAlive& out, std::string& error);

struct Range {
  ResponseHeader header;
  std::vector<KeyValue> kvs;
  std::int64_t count = 0;  // keys in the range, beyond any limit
};
bool decodeRange(std::string_view json, Range& out, std::string& error);

// encodeCreateUnlessExists' answer: created (the key's create revision is the put's revision)
// or found (the key as it is).
struct CreateUnlessExists {
  ResponseHeader header;
  bool created = false;
  KeyValue kv;
};
// key, value and lease are the request's: a created key's answer does not repeat them.
bool decodeCreateUnlessExists(std::string_view json, const std::string& key,
                              const std::string& value, LeaseId lease, CreateUnlessExists& out,
                              std::string& error);

struct WatchEvent {
  enum class Type { kPut, kDelete };
  Type type = Type::kPut;
  KeyValue kv;  // after the event; a deletion has the key and its mod revision only
};
// One line of a watch stream.
struct WatchMessage {
  ResponseHeader header;
  std::int64_t watchId = 0;
  bool created = false;
  bool canceled = false;
  std::string cancelReason;      // e.g. permission denied
  Revision compactRevision = 0;  // canceled because the start revision was compacted
  std::vector<WatchEvent> events;
  std::optional<GatewayError> error;  // the stream's {"error": ...}
};
bool decodeWatchMessage(std::string_view line, WatchMessage& out, std::string& error);

}  // namespace leasehold::etcd
