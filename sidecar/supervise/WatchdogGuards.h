#pragma once
// The watchdog's table of guarded process groups (WatchdogProcess holds one): which group dies
// at which CLOCK_BOOTTIME instant. One supervisor process may guard several groups (run mode
// with --shards: one command per owned shard), each with its own kill instant; every order
// names its group (WatchdogOrder: killAtNs > 0 guard, killAtNs == 0 stand down for that group,
// group 0 stand down for all).
//
// Pure and allocation-free (a fixed array, as the watchdog uses system calls only), so that the
// rules are unit-tested apart from the process. A full table (more groups than any shard count
// allows) refuses the newcomer; the caller kills that group at once: the safe side.
#include <array>
#include <cstddef>
#include <cstdint>

#include "supervise/WatchdogOrder.h"

namespace leasehold::supervise {

class WatchdogGuards {
 public:
  // More than --shards allows (1024) plus one single-Lease group.
  static constexpr std::size_t kCapacity = 1040;

  // Applies one order. false: a guard order that did not fit (the table is full).
  bool apply(const WatchdogOrder& order);
  // The earliest kill instant, 0 when nothing is guarded.
  std::int64_t nextKillAt() const;
  // Removes every group due at nowNs (killAt <= nowNs) into out (at most cap), returns how many.
  std::size_t takeDue(std::int64_t nowNs, std::int64_t* out, std::size_t cap);
  // Removes every group into out (the supervisor is gone), returns how many.
  std::size_t takeAll(std::int64_t* out, std::size_t cap);
  std::size_t size() const { return size_; }

 private:
  std::size_t find(std::int64_t group) const;
  void removeAt(std::size_t i);

  std::array<WatchdogOrder, kCapacity> guards_{};
  std::size_t size_ = 0;
};

}  // namespace leasehold::supervise
