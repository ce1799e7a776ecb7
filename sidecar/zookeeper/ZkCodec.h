#pragma once
// ZooKeeper's wire records (jute, zookeeper.jute) both ways, with no I/O: what ZkSession sends
// and reads, and what the tests' scripted server reads and answers. Integers are big-endian;
// a ustring or buffer is an int length (-1: null, read as empty) and its bytes; a vector is an
// int count and its items; a boolean is one byte. Every frame on the wire is an int length and
// that many bytes.
//
// Decoders never throw: a truncated or malformed input gives a Decoded holding an error that
// names the record and field ("ConnectResponse.passwd: truncated"). Trailing bytes after a
// record are malformed too, except where the protocol allows them (ConnectResponse's readOnly).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace leasehold::zookeeper {

// The largest frame accepted: ZooKeeper's own default jute.maxbuffer is 1 MB less a little,
// so a length above this is a broken or hostile peer, not a big answer.
inline constexpr std::int32_t kMaxFrameBytes = 4 * 1024 * 1024;

// OpCode (ZooDefs.OpCode) of the requests this client makes.
enum class ZkOp : std::int32_t {
  kDelete = 2,
  kExists = 3,
  kGetData = 4,
  kGetChildren = 8,
  kPing = 11,
  kGetChildren2 = 12,
  kCreate2 = 15,
  kAuth = 100,
  kCloseSession = -11,
};

// The xids of frames that are not answers to numbered requests.
inline constexpr std::int32_t kWatchEventXid = -1;
inline constexpr std::int32_t kPingXid = -2;
inline constexpr std::int32_t kAuthXid = -4;

// Create flags (CreateMode.toFlag).
inline constexpr std::int32_t kCreatePersistent = 0;
inline constexpr std::int32_t kCreateEphemeral = 1;
inline constexpr std::int32_t kCreatePersistentSequential = 2;
inline constexpr std::int32_t kCreateEphemeralSequential = 3;
inline constexpr std::int32_t kCreateContainer = 4;

inline constexpr std::int32_t kPermsAll = 31;  // READ|WRITE|CREATE|DELETE|ADMIN

// A decoded value or why there is none.
template <typename T>
class Decoded {
 public:
  Decoded(T value) : value_(std::move(value)) {}
  static Decoded failure(std::string error) { return Decoded(Error{std::move(error)}); }
  bool ok() const { return std::holds_alternative<T>(value_); }
  const T& value() const { return std::get<T>(value_); }
  T& value() { return std::get<T>(value_); }
  const std::string& error() const { return std::get<Error>(value_).text; }

 private:
  struct Error {
    std::string text;
  };
  explicit Decoded(Error e) : value_(std::move(e)) {}
  std::variant<T, Error> value_;
};

struct ConnectRequest {
  std::int32_t protocolVersion = 0;
  std::int64_t lastZxidSeen = 0;
  std::int32_t timeOutMs = 0;
  std::int64_t sessionId = 0;
  std::string passwd;  // 16 bytes once the server gave one; empty for a new session
  bool readOnly = false;
  bool operator==(const ConnectRequest&) const = default;
};

struct ConnectResponse {
  std::int32_t protocolVersion = 0;
  std::int32_t timeOutMs = 0;  // <= 0: the session asked for has expired
  std::int64_t sessionId = 0;
  std::string passwd;
  bool readOnly = false;  // absent on the wire from old servers: false
  bool operator==(const ConnectResponse&) const = default;
};

struct RequestHeader {
  std::int32_t xid = 0;
  std::int32_t type = 0;
  bool operator==(const RequestHeader&) const = default;
};

struct ReplyHeader {
  std::int32_t xid = 0;
  std::int64_t zxid = 0;
  std::int32_t err = 0;
  bool operator==(const ReplyHeader&) const = default;
};

// All 11 fields of data.Stat, in their wire order.
struct Stat {
  std::int64_t czxid = 0;
  std::int64_t mzxid = 0;
  std::int64_t ctime = 0;
  std::int64_t mtime = 0;
  std::int32_t version = 0;
  std::int32_t cversion = 0;
  std::int32_t aversion = 0;
  std::int64_t ephemeralOwner = 0;
  std::int32_t dataLength = 0;
  std::int32_t numChildren = 0;
  std::int64_t pzxid = 0;
  bool operator==(const Stat&) const = default;
};

struct Acl {
  std::int32_t perms = kPermsAll;
  std::string scheme;  // "world", "auth", "digest"
  std::string id;      // "anyone", "" (auth: the authenticated creator)
  bool operator==(const Acl&) const = default;
};

struct CreateRequest {
  std::string path;
  std::string data;
  std::vector<Acl> acl;
  std::int32_t flags = kCreatePersistent;
  bool operator==(const CreateRequest&) const = default;
};

struct CreateResponse {  // Create2Response
  std::string path;
  Stat stat;
  bool operator==(const CreateResponse&) const = default;
};

struct DeleteRequest {
  std::string path;
  std::int32_t version = -1;
  bool operator==(const DeleteRequest&) const = default;
};

// ExistsRequest, GetDataRequest, GetChildren2Request and GetChildrenRequest have this shape.
struct PathWatchRequest {
  std::string path;
  bool watch = false;
  bool operator==(const PathWatchRequest&) const = default;
};

struct GetDataResponse {
  std::string data;
  Stat stat;
  bool operator==(const GetDataResponse&) const = default;
};

struct GetChildren2Response {
  std::vector<std::string> children;
  Stat stat;
  bool operator==(const GetChildren2Response&) const = default;
};

struct AuthPacket {
  std::int32_t type = 0;
  std::string scheme;
  std::string auth;  // digest: "user:password"
  bool operator==(const AuthPacket&) const = default;
};

struct WatcherEvent {
  std::int32_t type = 0;   // EventType: 1 created, 2 deleted, 3 data, 4 children, -1 none
  std::int32_t state = 0;  // KeeperState: 3 connected, ...
  std::string path;
  bool operator==(const WatcherEvent&) const = default;
};

// Frames.
std::string frame(std::string_view payload);
// How the front of a receive buffer stands: a whole frame (its payload is
// buffer.substr(4, payloadBytes)), not yet a whole one, or a length that no good peer sends.
struct FrameScan {
  enum class Kind { kFrame, kNeedMore, kMalformed };
  Kind kind = Kind::kNeedMore;
  std::size_t payloadBytes = 0;
  std::string error;
};
FrameScan scanFrame(std::string_view buffer, std::int32_t maxPayload = kMaxFrameBytes);

// Each encodeX gives the record's bytes (no frame length); each decodeX reads exactly one
// record from the whole of its input.
std::string encode(const ConnectRequest& r);
std::string encode(const ConnectResponse& r);
std::string encode(const RequestHeader& r);
std::string encode(const ReplyHeader& r);
std::string encode(const Stat& r);
std::string encode(const CreateRequest& r);
std::string encode(const CreateResponse& r);
std::string encode(const DeleteRequest& r);
std::string encode(const PathWatchRequest& r);
std::string encode(const GetDataResponse& r);
std::string encode(const GetChildren2Response& r);
std::string encode(const AuthPacket& r);
std::string encode(const WatcherEvent& r);

Decoded<ConnectRequest> decodeConnectRequest(std::string_view bytes);
Decoded<ConnectResponse> decodeConnectResponse(std::string_view bytes);
Decoded<Stat> decodeStat(std::string_view bytes);
Decoded<CreateRequest> decodeCreateRequest(std::string_view bytes);
Decoded<CreateResponse> decodeCreateResponse(std::string_view bytes);
Decoded<DeleteRequest> decodeDeleteRequest(std::string_view bytes);
Decoded<PathWatchRequest> decodePathWatchRequest(std::string_view bytes);
Decoded<GetDataResponse> decodeGetDataResponse(std::string_view bytes);
Decoded<GetChildren2Response> decodeGetChildren2Response(std::string_view bytes);
Decoded<AuthPacket> decodeAuthPacket(std::string_view bytes);
Decoded<WatcherEvent> decodeWatcherEvent(std::string_view bytes);

// A request or reply frame's payload split into its header and the record after it.
struct Request {
  RequestHeader header;
  std::string_view body;
};
struct Reply {
  ReplyHeader header;
  std::string_view body;
};
Decoded<Request> decodeRequest(std::string_view payload);
Decoded<Reply> decodeReply(std::string_view payload);

// A whole request frame: header + body, length-prefixed.
std::string requestFrame(std::int32_t xid, ZkOp op, std::string_view body = {});
// A whole reply frame: header + body, length-prefixed.
std::string replyFrame(const ReplyHeader& header, std::string_view body = {});

}  // namespace leasehold::zookeeper
