// RENEWED and EXPIRES on an injected wall clock, and the table and JSON that show them.
#include "kubectl/LeaseRow.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "FakeClock.h"
#include "kubectl/LeaseTable.h"

namespace leasehold::kubectl {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// The FakeClock's wall time starts at 2026-11-30T10:00:00Z.
json lease(const std::string& ns, const std::string& name, const std::string& holder,
           const std::string& renew, int duration, int token, const std::string& pod = "",
           const std::string& preferred = "") {
  json o{{"metadata", {{"name", name}, {"namespace", ns}, {"resourceVersion", "7"}}},
         {"spec",
          {{"holderIdentity", holder},
           {"leaseDurationSeconds", duration},
           {"acquireTime", "2026-11-30T09:00:00.000000Z"},
           {"renewTime", renew},
           {"leaseTransitions", token}}}};
  if (!pod.empty()) o["metadata"]["annotations"]["leasehold.io/holder-pod"] = pod;
  if (!pod.empty()) o["metadata"]["annotations"]["leasehold.io/holder-address"] = "10.0.0.1";
  if (!preferred.empty()) o["metadata"]["annotations"]["leasehold.io/preferred-holder"] = preferred;
  return o;
}

LeaseRow row(const json& obj, time::WallTime now) {
  LeaseRow r;
  std::string error;
  EXPECT_TRUE(decodeLeaseRow(obj.dump(), now, r, error)) << error;
  return r;
}

TEST(LeaseRowTest, ExpiresFromRenewTimePlusDurationMinusNow) {
  time::FakeClock clock;
  struct Case {
    std::string renew;
    int duration;
    time::Duration advance;
    std::string renewed, expires;
    bool expired;
  };
  const std::vector<Case> cases{
      {"2026-11-30T09:59:58.000000Z", 15, 0s, "2s", "13s", false},
      {"2026-11-30T10:00:00.000000Z", 15, 14s, "14s", "1s", false},
      {"2026-11-30T10:00:00.000000Z", 15, 14500ms, "14s", "0s", false},
      {"2026-11-30T10:00:00.000000Z", 15, 15s, "15s", "expired", true},
      {"2026-11-30T10:00:00.000000Z", 15, 1h, "60m", "expired", true},
      {"2026-11-30T10:00:00.000000Z", 1, 2s, "2s", "expired", true},  // a released Lease
      // The holder's clock 5 s ahead of ours: RENEWED cannot be negative past -1s.
      {"2026-11-30T10:00:05.000000Z", 15, 0s, "<invalid>", "20s", false},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.renew + " +" + std::to_string(c.advance.count()));
    time::FakeClock clock;
    clock.advance(c.advance);
    const LeaseRow r = row(lease("ns", "demo", "web-0", c.renew, c.duration, 3), clock.wallNow());
    EXPECT_EQ(r.expired(), c.expired);
    EXPECT_EQ(LeaseTable::expiresCell(r), c.expires);
    const std::string table = LeaseTable::table({r}, false, false);
    EXPECT_NE(table.find(c.renewed), std::string::npos) << table;
  }
}

TEST(LeaseRowTest, NoRenewTimeOrDurationIsNone) {
  time::FakeClock clock;
  json o = lease("ns", "demo", "", "2026-11-30T10:00:00.000000Z", 15, 0);
  o["spec"].erase("renewTime");
  const LeaseRow r = row(o, clock.wallNow());
  EXPECT_FALSE(r.renewedAgo);
  EXPECT_FALSE(r.expiresIn);
  EXPECT_EQ(LeaseTable::expiresCell(r), "<none>");
}

TEST(LeaseTableTest, TableColumnsAsKubectl) {
  time::FakeClock clock;
  std::vector<LeaseRow> rows{
      row(lease("team-a", "demo", "web-0", "2026-11-30T09:59:57.000000Z", 15, 4, "web-0", "web-1"),
          clock.wallNow()),
      row(lease("team-b", "billing-leader", "", "2026-11-30T09:50:00.000000Z", 1, 12),
          clock.wallNow())};
  EXPECT_EQ(LeaseTable::table(rows, false, false),
            "NAME             HOLDER   POD      TOKEN   RENEWED   EXPIRES   PREFERRED\n"
            "demo             web-0    web-0    4       3s        12s       web-1\n"
            "billing-leader   <none>   <none>   12      10m       expired   <none>\n");
  EXPECT_EQ(LeaseTable::table(rows, true, true),
            "NAMESPACE   NAME             HOLDER   POD      TOKEN   RENEWED   EXPIRES   PREFERRED"
            "   ACQUIRED   DURATION   ADDRESS\n"
            "team-a      demo             web-0    web-0    4       3s        12s       web-1    "
            "   60m        15s        10.0.0.1\n"
            "team-b      billing-leader   <none>   <none>   12      10m       expired   <none>   "
            "   60m        1s         <none>\n");
}

TEST(LeaseTableTest, Json) {
  time::FakeClock clock;
  const LeaseRow r =
      row(lease("ns", "demo", "web-0", "2026-11-30T09:59:57.500000Z", 15, 4, "web-0", "web-1"),
          clock.wallNow());
  const json one = json::parse(LeaseTable::json(r));
  EXPECT_EQ(one["namespace"], "ns");
  EXPECT_EQ(one["name"], "demo");
  EXPECT_EQ(one["holder"], "web-0");
  EXPECT_EQ(one["pod"], "web-0");
  EXPECT_EQ(one["address"], "10.0.0.1");
  EXPECT_EQ(one["token"], 4);
  EXPECT_EQ(one["preferred"], "web-1");
  EXPECT_EQ(one["leaseDurationSeconds"], 15);
  EXPECT_EQ(one["renewTime"], "2026-11-30T09:59:57.500000Z");
  EXPECT_DOUBLE_EQ(one["renewedSecondsAgo"].get<double>(), 2.5);
  EXPECT_DOUBLE_EQ(one["expiresInSeconds"].get<double>(), 12.5);
  EXPECT_EQ(one["expired"], false);
  const json list = json::parse(LeaseTable::json(std::vector<LeaseRow>{r, r}));
  ASSERT_EQ(list["items"].size(), 2u);
  EXPECT_EQ(list["items"][1], one);
  EXPECT_EQ(json::parse(LeaseTable::json(std::vector<LeaseRow>{}))["items"], json::array());
}

TEST(LeaseRowTest, BadBodiesNameTheProblem) {
  time::FakeClock clock;
  std::vector<LeaseRow> rows;
  std::string error;
  EXPECT_FALSE(decodeLeaseRows("{\"kind\":\"Status\"}", clock.wallNow(), rows, error));
  EXPECT_NE(error.find("items"), std::string::npos) << error;
  EXPECT_FALSE(
      decodeLeaseRows(R"({"items":[{"metadata":{"name":"a"},"spec":{"leaseTransitions":"x"}}]})",
                      clock.wallNow(), rows, error));
  EXPECT_NE(error.find("items[0]"), std::string::npos) << error;
  LeaseRow r;
  EXPECT_FALSE(decodeLeaseRow("not json", clock.wallNow(), r, error));
}

}  // namespace
}  // namespace leasehold::kubectl
