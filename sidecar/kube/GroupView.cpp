#include "kube/GroupView.h"

#include "election/RendezvousScore.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <set>

namespace leasehold::kube {

namespace {
constexpr const char* kMemberInfix = "-member-";
}  // namespace

std::string GroupLayout::shardLease(std::size_t shard) const {
  return group + "-" + std::to_string(shard);
}

std::string GroupLayout::memberLease(const std::string& identity) const {
  // A name must not change across an upgrade, or a rolling update would count every member
  // twice: the score is fixed by its definition (election/RendezvousScore.h).
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(election::rendezvousScore(0, identity)));
  return group + kMemberInfix + hex;
}

std::optional<std::size_t> GroupLayout::shardOf(const std::string& name) const {
  if (name.size() <= group.size() + 1 || name.compare(0, group.size(), group) != 0 ||
      name[group.size()] != '-') {
    return std::nullopt;
  }
  const std::string_view digits(name.data() + group.size() + 1, name.size() - group.size() - 1);
  if (digits.size() > 1 && digits[0] == '0') return std::nullopt;
  std::size_t value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size() || value >= shards) {
    return std::nullopt;
  }
  return value;
}

bool GroupLayout::isMemberLease(const std::string& name) const {
  const std::string prefix = group + kMemberInfix;
  return name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0;
}

GroupView::GroupView(GroupLayout layout, std::string self, time::Duration defaultDuration)
    : layout_(std::move(layout)),
      self_(std::move(self)),
      defaultDuration_(defaultDuration),
      shards_(layout_.shards) {}

void GroupView::note(const std::string& name, const election::LeaseRecord& record,
                     time::MonoTime now) {
  const auto keep = [&](std::optional<Seen>& slot) {
    // Nothing moved: the observation time must not be reset (that would extend a dead term).
    if (slot && slot->record.resourceVersion == record.resourceVersion) return;
    slot = Seen{record, now};
  };
  if (auto shard = layout_.shardOf(name)) return keep(shards_[*shard]);
  if (!layout_.isMemberLease(name)) return;
  std::optional<Seen> slot;
  if (auto it = members_.find(name); it != members_.end()) slot = it->second;
  keep(slot);
  members_.insert_or_assign(name, *slot);
}

void GroupView::listed(const std::vector<std::pair<std::string, election::LeaseRecord>>& leases,
                       time::MonoTime now) {
  std::set<std::string> present;
  for (const auto& [name, record] : leases) {
    present.insert(name);
    note(name, record, now);
  }
  for (auto it = members_.begin(); it != members_.end();) {
    it = present.contains(it->first) ? std::next(it) : members_.erase(it);
  }
  for (std::size_t i = 0; i < shards_.size(); i++) {
    if (!present.contains(layout_.shardLease(i))) shards_[i].reset();
  }
}

void GroupView::changed(const std::string& name, const std::optional<election::LeaseRecord>& record,
                        time::MonoTime now) {
  if (record) return note(name, *record, now);
  if (auto shard = layout_.shardOf(name)) {
    shards_[*shard].reset();
  } else {
    members_.erase(name);
  }
}

time::MonoTime GroupView::expiry(const Seen& s) const {
  const auto& d = s.record.leaseDurationSeconds;
  return s.at + (d && *d > 0 ? time::Duration(std::chrono::seconds(*d)) : defaultDuration_);
}

std::vector<std::string> GroupView::liveMembers(time::MonoTime now) const {
  std::set<std::string> live{self_};
  for (const auto& [name, seen] : members_) {
    if (!seen.record.holderIdentity.empty() && now < expiry(seen)) {
      live.insert(seen.record.holderIdentity);
    }
  }
  return {live.begin(), live.end()};
}

std::vector<std::string> GroupView::owners(time::MonoTime now) const {
  std::vector<std::string> out(shards_.size());
  for (std::size_t i = 0; i < shards_.size(); i++) {
    const auto& s = shards_[i];
    if (s && !s->record.holderIdentity.empty() && now < expiry(*s)) {
      out[i] = s->record.holderIdentity;
    }
  }
  return out;
}

std::vector<std::string> GroupView::staleMemberLeases(time::MonoTime now,
                                                      time::Duration age) const {
  std::vector<std::string> out;
  for (const auto& [name, seen] : members_) {
    if (expiry(seen) + age < now) out.push_back(name);
  }
  return out;
}

std::optional<time::MonoTime> GroupView::nextExpiry(time::MonoTime now) const {
  std::optional<time::MonoTime> next;
  const auto consider = [&](const Seen& s) {
    if (s.record.holderIdentity.empty()) return;
    const auto at = expiry(s);
    if (at > now && (!next || at < *next)) next = at;
  };
  for (const auto& [name, seen] : members_)
    consider(seen);
  for (const auto& s : shards_)
    if (s) consider(*s);
  return next;
}

}  // namespace leasehold::kube
