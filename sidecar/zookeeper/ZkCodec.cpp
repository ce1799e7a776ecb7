#include "zookeeper/ZkCodec.h"

namespace leasehold::zookeeper {
namespace {

// Appends jute's primitive types.
class JuteWriter {
 public:
  JuteWriter& int32(std::int32_t v) { return bigEndian(static_cast<std::uint32_t>(v), 4); }
  JuteWriter& int64(std::int64_t v) { return bigEndian(static_cast<std::uint64_t>(v), 8); }
  JuteWriter& boolean(bool v) {
    out_.push_back(v ? '\1' : '\0');
    return *this;
  }
  // ustring and buffer are the same on the wire. We never send null (-1).
  JuteWriter& bytes(std::string_view v) {
    int32(static_cast<std::int32_t>(v.size()));
    out_.append(v);
    return *this;
  }
  JuteWriter& stat(const Stat& s) {
    int64(s.czxid).int64(s.mzxid).int64(s.ctime).int64(s.mtime);
    int32(s.version).int32(s.cversion).int32(s.aversion);
    int64(s.ephemeralOwner).int32(s.dataLength).int32(s.numChildren).int64(s.pzxid);
    return *this;
  }
  std::string take() { return std::move(out_); }

 private:
  JuteWriter& bigEndian(std::uint64_t v, int width) {
    for (int shift = (width - 1) * 8; shift >= 0; shift -= 8)
      out_.push_back(static_cast<char>((v >> shift) & 0xff));
    return *this;
  }
  std::string out_;
};

// Reads jute's primitive types; the first problem sticks and names the record and field.
class JuteReader {
 public:
  JuteReader(std::string_view in, const char* record) : in_(in), record_(record) {}

  std::int32_t int32(const char* field) { return static_cast<std::int32_t>(bigEndian(4, field)); }
  std::int64_t int64(const char* field) { return static_cast<std::int64_t>(bigEndian(8, field)); }
  bool boolean(const char* field) {
    if (!take(1, field)) return false;
    const char c = in_[at_ - 1];
    if (c != 0 && c != 1) fail(field, "not a boolean");
    return c == 1;
  }
  std::string bytes(const char* field) {
    const std::int32_t length = int32(field);
    if (failed()) return {};
    if (length == -1) return {};  // null
    if (length < 0) {
      fail(field, "negative length " + std::to_string(length));
      return {};
    }
    if (!take(static_cast<std::size_t>(length), field)) return {};
    return std::string(in_.substr(at_ - length, length));
  }
  std::int32_t count(const char* field) {
    const std::int32_t n = int32(field);
    if (failed()) return 0;
    if (n == -1) return 0;  // a null vector
    // Every item is at least 4 bytes: a count beyond what is left is a lie, not a big vector.
    if (n < 0 || static_cast<std::size_t>(n) > (in_.size() - at_) / 4) {
      fail(field, "bad count " + std::to_string(n));
      return 0;
    }
    return n;
  }
  Stat stat(const char* field) {
    prefix_ = std::string(field) + ".";
    Stat s;
    s.czxid = int64("czxid");
    s.mzxid = int64("mzxid");
    s.ctime = int64("ctime");
    s.mtime = int64("mtime");
    s.version = int32("version");
    s.cversion = int32("cversion");
    s.aversion = int32("aversion");
    s.ephemeralOwner = int64("ephemeralOwner");
    s.dataLength = int32("dataLength");
    s.numChildren = int32("numChildren");
    s.pzxid = int64("pzxid");
    prefix_.clear();
    return s;
  }
  std::string_view rest() {
    auto r = in_.substr(at_);
    at_ = in_.size();
    return r;
  }
  bool atEnd() const { return at_ == in_.size(); }
  bool failed() const { return error_.has_value(); }

  // The result: the value when everything was read and nothing is left over.
  template <typename T>
  Decoded<T> finish(T value) {
    if (!failed() && !atEnd()) {
      error_ = std::string(record_) + ": " + std::to_string(in_.size() - at_) +
               " unexpected bytes after the record";
    }
    if (failed()) return Decoded<T>::failure(*error_);
    return value;
  }

 private:
  bool take(std::size_t n, const char* field) {
    if (failed()) return false;
    if (in_.size() - at_ < n) {
      fail(field, "truncated");
      return false;
    }
    at_ += n;
    return true;
  }
  std::uint64_t bigEndian(int width, const char* field) {
    if (!take(width, field)) return 0;
    std::uint64_t v = 0;
    for (int i = 0; i < width; ++i)
      v = (v << 8) | static_cast<unsigned char>(in_[at_ - width + i]);
    return v;
  }
  void fail(const char* field, const std::string& why) {
    if (!error_) error_ = std::string(record_) + "." + prefix_ + field + ": " + why;
  }

  std::string_view in_;
  std::size_t at_ = 0;
  const char* record_;
  std::optional<std::string> error_;
  std::string prefix_;  // "stat." while reading a Stat
};

JuteWriter& writeAcls(JuteWriter& w, const std::vector<Acl>& acl) {
  w.int32(static_cast<std::int32_t>(acl.size()));
  for (const auto& a : acl)
    w.int32(a.perms).bytes(a.scheme).bytes(a.id);
  return w;
}

}  // namespace

std::string frame(std::string_view payload) {
  JuteWriter w;
  w.bytes(payload);
  return w.take();
}

FrameScan scanFrame(std::string_view buffer, std::int32_t maxPayload) {
  FrameScan scan;
  if (buffer.size() < 4) return scan;
  JuteReader r(buffer.substr(0, 4), "frame");
  const std::int32_t length = r.int32("length");
  if (length < 0 || length > maxPayload) {
    scan.kind = FrameScan::Kind::kMalformed;
    scan.error =
        "frame length " + std::to_string(length) + " outside 0.." + std::to_string(maxPayload);
    return scan;
  }
  scan.payloadBytes = static_cast<std::size_t>(length);
  if (buffer.size() - 4 >= scan.payloadBytes) scan.kind = FrameScan::Kind::kFrame;
  return scan;
}

std::string encode(const ConnectRequest& r) {
  JuteWriter w;
  w.int32(r.protocolVersion).int64(r.lastZxidSeen).int32(r.timeOutMs).int64(r.sessionId);
  return w.bytes(r.passwd).boolean(r.readOnly).take();
}

std::string encode(const ConnectResponse& r) {
  JuteWriter w;
  w.int32(r.protocolVersion).int32(r.timeOutMs).int64(r.sessionId).bytes(r.passwd);
  return w.boolean(r.readOnly).take();
}

std::string encode(const RequestHeader& r) {
  return JuteWriter().int32(r.xid).int32(r.type).take();
}

std::string encode(const ReplyHeader& r) {
  return JuteWriter().int32(r.xid).int64(r.zxid).int32(r.err).take();
}

std::string encode(const Stat& r) {
  return JuteWriter().stat(r).take();
}

std::string encode(const CreateRequest& r) {
  JuteWriter w;
  w.bytes(r.path).bytes(r.data);
  return writeAcls(w, r.acl).int32(r.flags).take();
}

std::string encode(const CreateResponse& r) {
  return JuteWriter().bytes(r.path).stat(r.stat).take();
}

std::string encode(const DeleteRequest& r) {
  return JuteWriter().bytes(r.path).int32(r.version).take();
}

std::string encode(const PathWatchRequest& r) {
  return JuteWriter().bytes(r.path).boolean(r.watch).take();
}

std::string encode(const GetDataResponse& r) {
  return JuteWriter().bytes(r.data).stat(r.stat).take();
}

std::string encode(const GetChildren2Response& r) {
  JuteWriter w;
  w.int32(static_cast<std::int32_t>(r.children.size()));
  for (const auto& c : r.children)
    w.bytes(c);
  return w.stat(r.stat).take();
}

std::string encode(const AuthPacket& r) {
  return JuteWriter().int32(r.type).bytes(r.scheme).bytes(r.auth).take();
}

std::string encode(const WatcherEvent& r) {
  return JuteWriter().int32(r.type).int32(r.state).bytes(r.path).take();
}

Decoded<ConnectRequest> decodeConnectRequest(std::string_view bytes) {
  JuteReader r(bytes, "ConnectRequest");
  ConnectRequest v;
  v.protocolVersion = r.int32("protocolVersion");
  v.lastZxidSeen = r.int64("lastZxidSeen");
  v.timeOutMs = r.int32("timeOut");
  v.sessionId = r.int64("sessionId");
  v.passwd = r.bytes("passwd");
  // Clients before 3.4 do not send readOnly.
  if (!r.failed() && !r.atEnd()) v.readOnly = r.boolean("readOnly");
  return r.finish(std::move(v));
}

Decoded<ConnectResponse> decodeConnectResponse(std::string_view bytes) {
  JuteReader r(bytes, "ConnectResponse");
  ConnectResponse v;
  v.protocolVersion = r.int32("protocolVersion");
  v.timeOutMs = r.int32("timeOut");
  v.sessionId = r.int64("sessionId");
  v.passwd = r.bytes("passwd");
  // A server answers readOnly only to a client that sent it; both forms are valid.
  if (!r.failed() && !r.atEnd()) v.readOnly = r.boolean("readOnly");
  return r.finish(std::move(v));
}

Decoded<Stat> decodeStat(std::string_view bytes) {
  JuteReader r(bytes, "Stat");
  Stat s = r.stat("stat");
  return r.finish(s);
}

Decoded<CreateRequest> decodeCreateRequest(std::string_view bytes) {
  JuteReader r(bytes, "CreateRequest");
  CreateRequest v;
  v.path = r.bytes("path");
  v.data = r.bytes("data");
  const std::int32_t n = r.count("acl");
  for (std::int32_t i = 0; i < n && !r.failed(); ++i) {
    Acl a;
    a.perms = r.int32("acl.perms");
    a.scheme = r.bytes("acl.scheme");
    a.id = r.bytes("acl.id");
    v.acl.push_back(std::move(a));
  }
  v.flags = r.int32("flags");
  return r.finish(std::move(v));
}

Decoded<CreateResponse> decodeCreateResponse(std::string_view bytes) {
  JuteReader r(bytes, "Create2Response");
  CreateResponse v;
  v.path = r.bytes("path");
  v.stat = r.stat("stat");
  return r.finish(std::move(v));
}

Decoded<DeleteRequest> decodeDeleteRequest(std::string_view bytes) {
  JuteReader r(bytes, "DeleteRequest");
  DeleteRequest v;
  v.path = r.bytes("path");
  v.version = r.int32("version");
  return r.finish(std::move(v));
}

Decoded<PathWatchRequest> decodePathWatchRequest(std::string_view bytes) {
  JuteReader r(bytes, "PathWatchRequest");
  PathWatchRequest v;
  v.path = r.bytes("path");
  v.watch = r.boolean("watch");
  return r.finish(std::move(v));
}

Decoded<GetDataResponse> decodeGetDataResponse(std::string_view bytes) {
  JuteReader r(bytes, "GetDataResponse");
  GetDataResponse v;
  v.data = r.bytes("data");
  v.stat = r.stat("stat");
  return r.finish(std::move(v));
}

Decoded<GetChildren2Response> decodeGetChildren2Response(std::string_view bytes) {
  JuteReader r(bytes, "GetChildren2Response");
  GetChildren2Response v;
  const std::int32_t n = r.count("children");
  for (std::int32_t i = 0; i < n && !r.failed(); ++i)
    v.children.push_back(r.bytes("children"));
  v.stat = r.stat("stat");
  return r.finish(std::move(v));
}

Decoded<AuthPacket> decodeAuthPacket(std::string_view bytes) {
  JuteReader r(bytes, "AuthPacket");
  AuthPacket v;
  v.type = r.int32("type");
  v.scheme = r.bytes("scheme");
  v.auth = r.bytes("auth");
  return r.finish(std::move(v));
}

Decoded<WatcherEvent> decodeWatcherEvent(std::string_view bytes) {
  JuteReader r(bytes, "WatcherEvent");
  WatcherEvent v;
  v.type = r.int32("type");
  v.state = r.int32("state");
  v.path = r.bytes("path");
  return r.finish(std::move(v));
}

Decoded<Request> decodeRequest(std::string_view payload) {
  JuteReader r(payload, "RequestHeader");
  Request v;
  v.header.xid = r.int32("xid");
  v.header.type = r.int32("type");
  v.body = r.rest();
  return r.finish(v);
}

Decoded<Reply> decodeReply(std::string_view payload) {
  JuteReader r(payload, "ReplyHeader");
  Reply v;
  v.header.xid = r.int32("xid");
  v.header.zxid = r.int64("zxid");
  v.header.err = r.int32("err");
  v.body = r.rest();
  return r.finish(v);
}

std::string requestFrame(std::int32_t xid, ZkOp op, std::string_view body) {
  std::string payload = encode(RequestHeader{xid, static_cast<std::int32_t>(op)});
  payload.append(body);
  return frame(payload);
}

std::string replyFrame(const ReplyHeader& header, std::string_view body) {
  std::string payload = encode(header);
  payload.append(body);
  return frame(payload);
}

}  // namespace leasehold::zookeeper
