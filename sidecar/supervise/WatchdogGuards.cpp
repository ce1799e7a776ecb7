#include "supervise/WatchdogGuards.h"

namespace leasehold::supervise {

std::size_t WatchdogGuards::find(std::int64_t group) const {
  for (std::size_t i = 0; i < size_; i++) {
    if (guards_[i].group == group) return i;
  }
  return size_;
}

void WatchdogGuards::removeAt(std::size_t i) {
  guards_[i] = guards_[size_ - 1];
  --size_;
}

bool WatchdogGuards::apply(const WatchdogOrder& order) {
  if (order.group == 0) {
    size_ = 0;
    return true;
  }
  const std::size_t i = find(order.group);
  if (order.killAtNs == 0) {
    if (i < size_) removeAt(i);
    return true;
  }
  if (i < size_) {
    guards_[i].killAtNs = order.killAtNs;
    return true;
  }
  if (size_ == kCapacity) return false;
  guards_[size_++] = order;
  return true;
}

std::int64_t WatchdogGuards::nextKillAt() const {
  std::int64_t next = 0;
  for (std::size_t i = 0; i < size_; i++) {
    if (next == 0 || guards_[i].killAtNs < next) next = guards_[i].killAtNs;
  }
  return next;
}

std::size_t WatchdogGuards::takeDue(std::int64_t nowNs, std::int64_t* out, std::size_t cap) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < size_ && n < cap;) {
    if (guards_[i].killAtNs <= nowNs) {
      out[n++] = guards_[i].group;
      removeAt(i);
    } else {
      ++i;
    }
  }
  return n;
}

std::size_t WatchdogGuards::takeAll(std::int64_t* out, std::size_t cap) {
  std::size_t n = 0;
  while (size_ > 0 && n < cap) {
    out[n++] = guards_[size_ - 1].group;
    --size_;
  }
  return n;
}

}  // namespace leasehold::supervise
