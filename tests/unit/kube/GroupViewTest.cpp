// GroupView: names, liveness and ownership on the observer's own clock.
#include "kube/GroupView.h"

#include <gtest/gtest.h>

namespace leasehold::kube {
namespace {

using namespace std::chrono_literals;
using election::LeaseRecord;
using Names = std::vector<std::string>;

LeaseRecord lease(const std::string& holder, const std::string& rv, int seconds = 15) {
  LeaseRecord r;
  r.holderIdentity = holder;
  r.resourceVersion = {rv};
  r.leaseDurationSeconds = seconds;
  return r;
}

TEST(GroupLayoutTest, Names) {
  const GroupLayout l{"work", 16};
  EXPECT_EQ(l.shardLease(3), "work-3");
  EXPECT_EQ(l.shardOf("work-15"), 15u);
  for (const char* name : {"work-16", "work-03", "work-", "work-x", "other-1", "work-1a"})
    EXPECT_FALSE(l.shardOf(name)) << name;
  const auto member = l.memberLease("pod-a_1234");
  EXPECT_TRUE(l.isMemberLease(member));
  EXPECT_FALSE(l.shardOf(member));
  EXPECT_EQ(member.size(), std::string("work-member-").size() + 16);
  EXPECT_NE(member, l.memberLease("pod-b_1234"));
  // The name every release has given this identity's membership Lease: a member whose name
  // changed across an upgrade would be counted twice by the others.
  EXPECT_EQ(member, "work-member-507e66911783018b");
}

TEST(GroupViewTest, MembersLiveForTheirDurationFromTheLastChangeSeenHere) {
  const GroupLayout l{"work", 2};
  GroupView v(l, "me", 15s);
  const time::MonoTime t0{};
  EXPECT_EQ(v.liveMembers(t0), Names{"me"});
  v.listed({{l.memberLease("a"), lease("a", "1")}, {l.memberLease("b"), lease("b", "2")}}, t0);
  EXPECT_EQ(v.liveMembers(t0), (Names{"a", "b", "me"}));
  // The same resourceVersion again (a re-list) does not extend the term.
  v.changed(l.memberLease("a"), lease("a", "1"), t0 + 10s);
  v.changed(l.memberLease("b"), lease("b", "3"), t0 + 10s);
  EXPECT_EQ(v.liveMembers(t0 + 15s), (Names{"b", "me"}));
  EXPECT_EQ(v.nextExpiry(t0 + 15s), t0 + 25s);
  v.changed(l.memberLease("b"), std::nullopt, t0 + 16s);  // deleted on SIGTERM
  EXPECT_EQ(v.liveMembers(t0 + 16s), Names{"me"});
}

TEST(GroupViewTest, MembershipLeasesExpiredLongAgoAreStale) {
  const GroupLayout l{"work", 1};
  GroupView v(l, "me", 15s);
  const time::MonoTime t0{};
  v.listed({{l.memberLease("a"), lease("a", "1")}, {l.memberLease("b"), lease("b", "2")}}, t0);
  v.changed(l.memberLease("b"), lease("b", "3"), t0 + 100s);
  EXPECT_TRUE(
      v.staleMemberLeases(t0 + 165s, 150s).empty());  // a expired at 15 s: 150 s is not past
  EXPECT_EQ(v.staleMemberLeases(t0 + 166s, 150s), Names{l.memberLease("a")});
  EXPECT_TRUE(v.staleMemberLeases(t0 + 166s, 151s).empty());
}

TEST(GroupViewTest, AShardHasAnOwnerWhileItsLeaseIsValidAsObserved) {
  const GroupLayout l{"work", 3};
  GroupView v(l, "me", 15s);
  const time::MonoTime t0{};
  v.listed(
      {{"work-0", lease("a", "1", 2)}, {"work-2", lease("", "2")}, {"unrelated", lease("x", "3")}},
      t0);
  EXPECT_EQ(v.owners(t0), (Names{"a", "", ""}));
  EXPECT_EQ(v.owners(t0 + 2s), (Names{"", "", ""}));
  v.changed("work-1", lease("b", "4"), t0 + 1s);
  EXPECT_EQ(v.owners(t0 + 3s), (Names{"", "b", ""}));
  // A list without a Lease means it is gone.
  v.listed({}, t0 + 4s);
  EXPECT_EQ(v.owners(t0 + 4s), (Names{"", "", ""}));
}

}  // namespace
}  // namespace leasehold::kube
