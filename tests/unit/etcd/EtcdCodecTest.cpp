// etcd's gateway JSON both ways. The answers are as etcd 3.6.16 sent them (docs/etcd-gateway.md:
// one member on loopback, curl): int64s as strings, zero values left out, keys base64. Requests
// are checked field by field as the gateway reads them; every malformed answer names its field.
#include "etcd/EtcdCodec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace leasehold::etcd {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// base64 of "elect/390da2473308c905" and of "me", as the server sent them.
constexpr const char* kKey64 = "ZWxlY3QvMzkwZGEyNDczMzA4YzkwNQ==";
const std::string kKey = "elect/390da2473308c905";

TEST(EtcdCodecTest, LeaseGrantAsTheServerSendsIt) {
  LeaseGrant g;
  std::string error;
  ASSERT_TRUE(decodeLeaseGrant(
      R"({"header":{"cluster_id":"15118495548433857066", "member_id":"13668033151171901709", "revision":"1", "raft_term":"2"}, "ID":"4111120461541722371", "TTL":"5"})",
      g, error))
      << error;
  EXPECT_EQ(g.id, 4111120461541722371);
  EXPECT_EQ(g.ttlSeconds, 5);
  EXPECT_EQ(g.header.revision, 1);
  EXPECT_EQ(g.header.memberId, 13668033151171901709ULL) << "above int64's range";
  EXPECT_EQ(g.header.raftTerm, 2U);
}

TEST(EtcdCodecTest, KeepAliveOfALiveAndOfAGoneLease) {
  struct Case {
    const char* name;
    const char* body;
    std::int64_t wantTtl;
  };
  for (
      const Case& c : {
          Case{
              "live",
              R"({"result":{"header":{"cluster_id":"15118495548433857066","member_id":"13668033151171901709","revision":"1","raft_term":"2"},"ID":"4111120461541722373","TTL":"5"}})",
              5},
          Case{
              "gone: TTL left out",
              R"({"result":{"header":{"cluster_id":"15118495548433857066","member_id":"13668033151171901709","revision":"2","raft_term":"2"},"ID":"12345"}})",
              0},
      }) {
    KeepAlive k;
    std::string error;
    ASSERT_TRUE(decodeKeepAlive(c.body, k, error)) << c.name << ": " << error;
    EXPECT_EQ(k.ttlSeconds, c.wantTtl) << c.name;
  }
}

TEST(EtcdCodecTest, CreateUnlessExistsCreatedOrFound) {
  CreateUnlessExists created;
  std::string error;
  ASSERT_TRUE(decodeCreateUnlessExists(
      R"({"header":{"cluster_id":"15118495548433857066", "member_id":"13668033151171901709", "revision":"2", "raft_term":"2"}, "succeeded":true, "responses":[{"response_put":{"header":{"revision":"2"}}}]})",
      kKey, "me", 4111120461541722373, created, error))
      << error;
  EXPECT_TRUE(created.created);
  EXPECT_EQ(created.kv, (KeyValue{kKey, "me", 2, 2, 1, 4111120461541722373}));

  CreateUnlessExists found;
  ASSERT_TRUE(decodeCreateUnlessExists(
      std::string(
          R"({"header":{"revision":"7"},"responses":[{"response_range":{"header":{"revision":"7"},"kvs":[{"key":")") +
          kKey64 +
          R"(","create_revision":"2","mod_revision":"3","version":"2","value":"bWU=","lease":"4111120461541722373"}],"count":"1"}}]})",
      kKey, "other", 99, found, error))
      << error;
  EXPECT_FALSE(found.created) << "succeeded left out: false";
  EXPECT_EQ(found.kv, (KeyValue{kKey, "me", 2, 3, 2, 4111120461541722373}))
      << "the key as it is, not as asked";
}

TEST(EtcdCodecTest, RangeAsTheServerSendsIt) {
  Range r;
  std::string error;
  ASSERT_TRUE(decodeRange(
      std::string(
          R"({"header":{"cluster_id":"15118495548433857066", "member_id":"13668033151171901709", "revision":"2", "raft_term":"2"}, "kvs":[{"key":")") +
          kKey64 +
          R"(", "create_revision":"2", "mod_revision":"2", "version":"1", "value":"bWU=", "lease":"4111120461541722373"}], "count":"1"})",
      r, error))
      << error;
  ASSERT_EQ(r.kvs.size(), 1U);
  EXPECT_EQ(r.kvs[0], (KeyValue{kKey, "me", 2, 2, 1, 4111120461541722373}));
  EXPECT_EQ(r.count, 1);

  Range empty;
  ASSERT_TRUE(decodeRange(R"({"header":{"revision":"5"}})", empty, error)) << error;
  EXPECT_TRUE(empty.kvs.empty()) << "no kvs, no count: an empty range";
  EXPECT_EQ(empty.count, 0);
}

TEST(EtcdCodecTest, WatchMessagesAsTheServerSendsThem) {
  struct Case {
    const char* name;
    std::string line;
    bool created, canceled;
    std::vector<WatchEvent::Type> types;
    std::string cancelReason;
  };
  const std::vector<Case> cases = {
      {"created",
       R"({"result":{"header":{"cluster_id":"15118495548433857066","member_id":"13668033151171901709","revision":"2","raft_term":"2"},"created":true}})",
       true,
       false,
       {},
       ""},
      {"put (no type)",
       R"({"result":{"header":{"revision":"3"},"events":[{"kv":{"key":"ZWxlY3QveA==","create_revision":"3","mod_revision":"3","version":"1","value":"dg=="}}]}})",
       false,
       false,
       {WatchEvent::Type::kPut},
       ""},
      {"delete",
       R"({"result":{"header":{"revision":"4"},"events":[{"type":"DELETE","kv":{"key":"ZWxlY3QveA==","mod_revision":"4"}}]}})",
       false,
       false,
       {WatchEvent::Type::kDelete},
       ""},
      {"denied",
       R"({"result":{"header":{"revision":"5"},"watch_id":"-1","created":true,"canceled":true,"cancel_reason":"rpc error: code = PermissionDenied desc = etcdserver: permission denied"}})",
       true,
       true,
       {},
       "rpc error: code = PermissionDenied desc = etcdserver: permission denied"},
  };
  for (const auto& c : cases) {
    WatchMessage m;
    std::string error;
    ASSERT_TRUE(decodeWatchMessage(c.line, m, error)) << c.name << ": " << error;
    EXPECT_EQ(m.created, c.created) << c.name;
    EXPECT_EQ(m.canceled, c.canceled) << c.name;
    EXPECT_EQ(m.cancelReason, c.cancelReason) << c.name;
    std::vector<WatchEvent::Type> types;
    for (const auto& e : m.events)
      types.push_back(e.type);
    EXPECT_EQ(types, c.types) << c.name;
    for (const auto& e : m.events)
      EXPECT_EQ(e.kv.key, "elect/x") << c.name;
  }
}

TEST(EtcdCodecTest, ErrorAnswersAndStreamErrors) {
  struct Case {
    std::string body;
    bool isError;
    int code;
    std::string message;
  };
  for (
      const Case& c : std::vector<Case>{
          {R"({"code":16, "message":"etcdserver: invalid auth token"})", true, 16,
           "etcdserver: invalid auth token"},
          {R"({"code":7, "message":"etcdserver: permission denied"})", true, 7,
           "etcdserver: permission denied"},
          {R"({"error":{"grpc_code":14,"http_code":503,"message":"etcdserver: no leader","http_status":"Service Unavailable"}})",
           true, 14, "etcdserver: no leader"},
          {R"({"header":{"revision":"5"}})", false, 0, ""},
          {"not json", false, 0, ""},
      }) {
    GatewayError e;
    ASSERT_EQ(decodeGatewayError(c.body, e), c.isError) << c.body;
    if (!c.isError) continue;
    EXPECT_EQ(e.code, c.code) << c.body;
    EXPECT_EQ(e.message, c.message) << c.body;
  }
  WatchMessage m;
  std::string error;
  ASSERT_TRUE(decodeWatchMessage(
      R"({"error":{"grpc_code":16,"http_code":401,"message":"etcdserver: invalid auth token"}})", m,
      error))
      << error;
  ASSERT_TRUE(m.error.has_value());
  EXPECT_EQ(m.error->code, kCodeUnauthenticated);
}

TEST(EtcdCodecTest, MalformedAnswersNameTheirField) {
  struct Case {
    const char* name;
    std::function<bool(std::string&)> decode;
    const char* wantInError;
  };
  const std::vector<Case> cases = {
      {"not json",
       [](std::string& e) {
         Range r;
         return decodeRange("{", r, e);
       },
       "not a JSON object"},
      {"revision not a number",
       [](std::string& e) {
         Range r;
         return decodeRange(R"({"header":{"revision":"12x"}})", r, e);
       },
       "header.revision: not an integer"},
      {"key not base64",
       [](std::string& e) {
         Range r;
         return decodeRange(R"({"kvs":[{"key":"!!!"}]})", r, e);
       },
       "kvs[0].key: not base64"},
      {"no lease granted",
       [](std::string& e) {
         LeaseGrant g;
         return decodeLeaseGrant(R"({"header":{}})", g, e);
       },
       "no lease granted"},
      {"keep-alive without result",
       [](std::string& e) {
         KeepAlive k;
         return decodeKeepAlive(R"({"ID":"1","TTL":"5"})", k, e);
       },
       "result: missing"},
      {"watch event type",
       [](std::string& e) {
         WatchMessage m;
         return decodeWatchMessage(R"({"result":{"events":[{"type":"MOVE","kv":{}}]}})", m, e);
       },
       "result.events[0].type: unknown"},
      {"txn found nothing",
       [](std::string& e) {
         CreateUnlessExists c;
         return decodeCreateUnlessExists(R"({"responses":[{"response_range":{}}]})", "k", "v", 1, c,
                                         e);
       },
       "responses[0].response_range: the key is not there"},
      {"txn's put without revision",
       [](std::string& e) {
         CreateUnlessExists c;
         return decodeCreateUnlessExists(R"({"succeeded":true,"responses":[{"response_put":{}}]})",
                                         "k", "v", 1, c, e);
       },
       "responses[0].response_put.header.revision: missing"},
      {"no token",
       [](std::string& e) {
         std::string token;
         return decodeAuthenticate(R"({"header":{}})", token, e);
       },
       "token: missing"},
  };
  for (const auto& c : cases) {
    std::string error;
    EXPECT_FALSE(c.decode(error)) << c.name;
    EXPECT_THAT(error, HasSubstr(c.wantInError)) << c.name;
  }
}

TEST(EtcdCodecTest, RequestsAsTheGatewayReadsThem) {
  const auto txn = json::parse(encodeCreateUnlessExists(kKey, "me", 4111120461541722373));
  EXPECT_EQ(txn["compare"][0],
            (json{{"key", kKey64}, {"target", "CREATE"}, {"create_revision", "0"}}));
  EXPECT_EQ(txn["success"][0]["request_put"],
            (json{{"key", kKey64}, {"value", "bWU="}, {"lease", "4111120461541722373"}}));
  EXPECT_EQ(txn["failure"][0]["request_range"], (json{{"key", kKey64}}));

  EXPECT_EQ(json::parse(encodeLeaseGrant(5)), (json{{"TTL", "5"}}));
  EXPECT_EQ(json::parse(encodeLeaseId(4111120461541722373)), (json{{"ID", "4111120461541722373"}}));
  EXPECT_EQ(json::parse(encodeAuthenticate("lh", "pw")),
            (json{{"name", "lh"}, {"password", "pw"}}));

  // The leader: the oldest key under the prefix; a predecessor: the newest created before mine.
  EXPECT_EQ(json::parse(encodeRangeByCreation("elect/", 1, false, std::nullopt)),
            (json{{"key", "ZWxlY3Qv"},
                  {"range_end", "ZWxlY3Qw"},
                  {"sort_order", "ASCEND"},
                  {"sort_target", "CREATE"},
                  {"limit", "1"}}));
  EXPECT_EQ(json::parse(encodeRangeByCreation("elect/", 1, true, 10))["max_create_revision"], "9")
      << "inclusive on the server: created before 10 is at most 9";
  EXPECT_FALSE(
      json::parse(encodeRangeByCreation("elect/", 0, false, std::nullopt)).contains("limit"));

  EXPECT_EQ(json::parse(encodeWatchCreate("elect/a", false, 12)),
            (json{{"create_request", {{"key", "ZWxlY3QvYQ=="}, {"start_revision", "12"}}}}));
  EXPECT_EQ(json::parse(encodeWatchCreate("elect/", true, 0)),
            (json{{"create_request", {{"key", "ZWxlY3Qv"}, {"range_end", "ZWxlY3Qw"}}}}));
  EXPECT_EQ(json::parse(encodeDeleteKey("elect/a")), (json{{"key", "ZWxlY3QvYQ=="}}));
  // The keep-alive's confirmation: linearizable, so never `serializable`.
  EXPECT_EQ(json::parse(encodeLinearizableCount("elect/a")),
            (json{{"key", "ZWxlY3QvYQ=="}, {"count_only", true}}));
}

TEST(EtcdCodecTest, PrefixEnd) {
  struct Case {
    std::string prefix, want;
  };
  for (const Case& c : std::vector<Case>{{"elect/", "elect0"},
                                         {"a", "b"},
                                         {std::string("a\xff", 2), "b"},
                                         {std::string("\xff\xff", 2), std::string(1, '\0')},
                                         {"", std::string(1, '\0')}}) {
    EXPECT_EQ(prefixEnd(c.prefix), c.want) << c.prefix;
  }
}

}  // namespace
}  // namespace leasehold::etcd
