// ZkCodec: every record both ways against bytes from kazoo 2.8.0's serializer
// (kazoo/protocol/serialization.py; the answers' bytes were packed by hand with struct and
// parsed back by kazoo to the values below), every proper prefix of each record refused as
// truncated, and the malformed frames and fields a broken peer could send.
#include "zookeeper/ZkCodec.h"

#include <gtest/gtest.h>

#include <functional>

namespace leasehold::zookeeper {
namespace {

using namespace std::string_literals;

std::string hex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

// Stat{1..11}, as kazoo's stat_struct '!qqqqiiiqiiq' packs it.
const std::string kStatBytes =
    "\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00"
    "\x03\x00\x00\x00\x00\x00\x00\x00\x04\x00\x00\x00\x05\x00\x00\x00\x06\x00\x00\x00\x07\x00\x00"
    "\x00\x00\x00\x00\x00\x08\x00\x00\x00\x09\x00\x00\x00\x0a\x00\x00\x00\x00\x00\x00\x00\x0b"s;
const Stat kStat{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};

struct Case {
  std::string name;
  std::string bytes;
  std::function<std::string()> encode;
  // Decodes and compares with the expected value: "" when equal, else what differs or the error.
  std::function<std::string(std::string_view)> decode;
  // ConnectRequest/Response: the last byte (readOnly) may be absent.
  bool lastByteOptional = false;
};

template <typename T>
std::function<std::string(std::string_view)> decodesTo(Decoded<T> (*decoder)(std::string_view),
                                                       T expected) {
  return [decoder, expected](std::string_view bytes) -> std::string {
    auto d = decoder(bytes);
    if (!d.ok()) return "error: " + d.error();
    return d.value() == expected ? "" : "decoded a different value";
  };
}

template <typename T>
Case make(std::string name, std::string bytes, T value, Decoded<T> (*decoder)(std::string_view),
          bool lastByteOptional = false) {
  return Case{std::move(name), std::move(bytes), [value] { return encode(value); },
              decodesTo(decoder, value), lastByteOptional};
}

std::vector<Case> cases() {
  return {
      make("ConnectRequest",
           "\x00\x00\x00\x00\x11\x22\x33\x44\x55\x66\x77\x88\x00\x00\x27\x10\x01\x02\x03\x04\x05"
           "\x06\x07\x08\x00\x00\x00\x10\x30\x31\x32\x33\x34\x35\x36\x37\x38\x39\x61\x62\x63\x64"
           "\x65\x66\x00"s,
           ConnectRequest{0, 0x1122334455667788, 10000, 0x0102030405060708, "0123456789abcdef",
                          false},
           &decodeConnectRequest, true),
      make("ConnectResponse",
           "\x00\x00\x00\x00\x00\x00\x17\x70\x00\x00\x00\x00\x00\x00\x12\x34\x00\x00\x00\x10\x30"
           "\x31\x32\x33\x34\x35\x36\x37\x38\x39\x61\x62\x63\x64\x65\x66\x00"s,
           ConnectResponse{0, 6000, 0x1234, "0123456789abcdef", false}, &decodeConnectResponse,
           true),
      make("Stat", kStatBytes, kStat, &decodeStat),
      make("Create2Request",
           "\x00\x00\x00\x05\x2f\x65\x2f\x6e\x2d\x00\x00\x00\x02\x68\x69\x00\x00\x00\x01\x00\x00"
           "\x00\x1f\x00\x00\x00\x05\x77\x6f\x72\x6c\x64\x00\x00\x00\x06\x61\x6e\x79\x6f\x6e\x65"
           "\x00\x00\x00\x03"s,
           CreateRequest{"/e/n-", "hi", {Acl{31, "world", "anyone"}}, kCreateEphemeralSequential},
           &decodeCreateRequest),
      make("Create2Response", "\x00\x00\x00\x07\x2f\x65\x2f\x6e\x2d\x30\x31"s + kStatBytes,
           CreateResponse{"/e/n-01", kStat}, &decodeCreateResponse),
      make("DeleteRequest", "\x00\x00\x00\x02\x2f\x61\x00\x00\x00\x07"s, DeleteRequest{"/a", 7},
           &decodeDeleteRequest),
      make("ExistsRequest", "\x00\x00\x00\x02\x2f\x61\x01"s, PathWatchRequest{"/a", true},
           &decodePathWatchRequest),
      make("GetDataRequest", "\x00\x00\x00\x02\x2f\x61\x00"s, PathWatchRequest{"/a", false},
           &decodePathWatchRequest),
      make("GetDataResponse", "\x00\x00\x00\x02\x68\x69"s + kStatBytes,
           GetDataResponse{"hi", kStat}, &decodeGetDataResponse),
      make("GetChildren2Response",
           "\x00\x00\x00\x02\x00\x00\x00\x01\x61\x00\x00\x00\x02\x62\x63"s + kStatBytes,
           GetChildren2Response{{"a", "bc"}, kStat}, &decodeGetChildren2Response),
      make("AuthPacket",
           "\x00\x00\x00\x00\x00\x00\x00\x06\x64\x69\x67\x65\x73\x74\x00\x00\x00\x03\x75\x3a\x70"s,
           AuthPacket{0, "digest", "u:p"}, &decodeAuthPacket),
      make("WatcherEvent", "\x00\x00\x00\x04\x00\x00\x00\x03\x00\x00\x00\x02\x2f\x61"s,
           WatcherEvent{4, 3, "/a"}, &decodeWatcherEvent),
  };
}

TEST(ZkCodecTest, EveryRecordEncodesToKazoosBytesAndDecodesBack) {
  for (const auto& c : cases()) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(hex(c.encode()), hex(c.bytes));
    EXPECT_EQ(c.decode(c.bytes), "");
  }
}

TEST(ZkCodecTest, EveryTruncatedRecordIsAnErrorNamingTheRecord) {
  for (const auto& c : cases()) {
    for (std::size_t n = 0; n < c.bytes.size(); ++n) {
      if (c.lastByteOptional && n == c.bytes.size() - 1) continue;
      SCOPED_TRACE(c.name + " cut to " + std::to_string(n) + " bytes");
      const std::string result = c.decode(std::string_view(c.bytes).substr(0, n));
      EXPECT_TRUE(result.starts_with("error: ")) << result;
    }
  }
}

TEST(ZkCodecTest, TrailingBytesAfterARecordAreAnError) {
  for (const auto& c : cases()) {
    SCOPED_TRACE(c.name);
    const std::string result = c.decode(c.bytes + "\x00"s);
    EXPECT_NE(result.find("unexpected bytes after the record"), std::string::npos) << result;
  }
}

TEST(ZkCodecTest, ConnectRecordsWithoutReadOnlyAreTheOldFormAndValid) {
  auto response = decodeConnectResponse(
      encode(ConnectResponse{0, 6000, 7, "0123456789abcdef", false}).substr(0, 36));
  ASSERT_TRUE(response.ok()) << response.error();
  EXPECT_EQ(response.value().sessionId, 7);
  EXPECT_FALSE(response.value().readOnly);
}

TEST(ZkCodecTest, MalformedFieldsAreErrorsNamingTheField) {
  struct Malformed {
    std::string name;
    std::function<std::string()> error;
    std::string expected;
  };
  const std::vector<Malformed> table = {
      {"a boolean that is neither 0 nor 1",
       [] { return decodePathWatchRequest("\x00\x00\x00\x02/a\x02"s).error(); },
       "PathWatchRequest.watch: not a boolean"},
      {"a negative string length other than -1",
       [] { return decodeDeleteRequest("\xff\xff\xff\xfe\x00\x00\x00\x01"s).error(); },
       "DeleteRequest.path: negative length -2"},
      {"a string longer than the record",
       [] {
         return decodeWatcherEvent("\x00\x00\x00\x01\x00\x00\x00\x03\x00\x00\x00\x09/a"s).error();
       },
       "WatcherEvent.path: truncated"},
      {"a child count beyond what the record holds",
       [] { return decodeGetChildren2Response("\x7f\xff\xff\xff"s + kStatBytes).error(); },
       "GetChildren2Response.children: bad count 2147483647"},
      {"a negative child count",
       [] { return decodeGetChildren2Response("\xff\xff\xff\xf0"s + kStatBytes).error(); },
       "GetChildren2Response.children: bad count -16"},
      {"a Stat cut in its last field",
       [] { return decodeCreateResponse("\x00\x00\x00\x01/"s + kStatBytes.substr(0, 67)).error(); },
       "Create2Response.stat.pzxid: truncated"},
      {"a reply header cut short", [] { return decodeReply("\x00\x00\x00\x05\x00\x00"s).error(); },
       "ReplyHeader.zxid: truncated"},
      {"a request header cut short",
       [] { return decodeRequest("\x00\x00\x00\x05\x00\x00"s).error(); },
       "RequestHeader.type: truncated"},
  };
  for (const auto& m : table) {
    SCOPED_TRACE(m.name);
    EXPECT_EQ(m.error(), m.expected);
  }
}

TEST(ZkCodecTest, NullStringsAndVectorsReadAsEmpty) {
  auto event = decodeWatcherEvent("\xff\xff\xff\xff\xff\xff\xff\xfd\xff\xff\xff\xff"s);
  ASSERT_TRUE(event.ok()) << event.error();
  EXPECT_EQ(event.value(), (WatcherEvent{-1, -3, ""}));
  auto children = decodeGetChildren2Response("\xff\xff\xff\xff"s + kStatBytes);
  ASSERT_TRUE(children.ok()) << children.error();
  EXPECT_TRUE(children.value().children.empty());
}

TEST(ZkCodecTest, FramesAreLengthPrefixedAndBoundedBothWays) {
  EXPECT_EQ(hex(frame("abc")), "00000003616263");
  struct Scan {
    std::string buffer;
    FrameScan::Kind kind;
    std::size_t payloadBytes;
    std::string error;
  };
  const std::vector<Scan> table = {
      {""s, FrameScan::Kind::kNeedMore, 0, ""},
      {"\x00\x00\x00"s, FrameScan::Kind::kNeedMore, 0, ""},
      {"\x00\x00\x00\x03"
       "ab"s,
       FrameScan::Kind::kNeedMore, 3, ""},
      {"\x00\x00\x00\x03"
       "abcde"s,
       FrameScan::Kind::kFrame, 3, ""},
      {"\x00\x00\x00\x00"s, FrameScan::Kind::kFrame, 0, ""},
      {"\xff\xff\xff\xff"s, FrameScan::Kind::kMalformed, 0, "frame length -1 outside 0..4194304"},
      {"\x00\x40\x00\x01"s, FrameScan::Kind::kMalformed, 0,
       "frame length 4194305 outside 0..4194304"},
      {"\x00\x40\x00\x00"s, FrameScan::Kind::kNeedMore, 4194304, ""},
  };
  for (const auto& s : table) {
    SCOPED_TRACE(hex(s.buffer));
    const FrameScan scan = scanFrame(s.buffer);
    EXPECT_EQ(scan.kind, s.kind);
    EXPECT_EQ(scan.payloadBytes, s.payloadBytes);
    EXPECT_EQ(scan.error, s.error);
  }
}

TEST(ZkCodecTest, RequestAndReplyFramesCarryTheirHeaders) {
  // kazoo: int_int_struct.pack(-2, 11) for a ping, (xid, -11) for closeSession.
  EXPECT_EQ(hex(requestFrame(kPingXid, ZkOp::kPing)), "00000008fffffffe0000000b");
  EXPECT_EQ(hex(requestFrame(9, ZkOp::kCloseSession)), "0000000800000009fffffff5");
  EXPECT_EQ(hex(requestFrame(1, ZkOp::kExists, encode(PathWatchRequest{"/a", true}))),
            "0000000f0000000100000003000000022f6101");
  // kazoo: reply_header_struct '!iqi' of (5, 0x100000002, -101).
  const std::string reply = replyFrame(ReplyHeader{5, 0x100000002, -101});
  EXPECT_EQ(hex(reply),
            "00000010"
            "00000005"
            "0000000100000002"
            "ffffff9b");
  auto decoded = decodeReply(std::string_view(reply).substr(4));
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  EXPECT_EQ(decoded.value().header, (ReplyHeader{5, 0x100000002, -101}));
  EXPECT_TRUE(decoded.value().body.empty());
  const std::string deleteFrame = requestFrame(3, ZkOp::kDelete, "xy");  // body views into it
  auto request = decodeRequest(std::string_view(deleteFrame).substr(4));
  ASSERT_TRUE(request.ok()) << request.error();
  EXPECT_EQ(request.value().header, (RequestHeader{3, 2}));
  EXPECT_EQ(request.value().body, "xy");
}

}  // namespace
}  // namespace leasehold::zookeeper
