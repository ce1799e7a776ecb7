#pragma once
// Drives the io_context from a test until a condition holds, without sleeping.
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>

namespace leasehold::net::test {

// Runs handlers until `done()` is true; false if `limit` passed first.
inline bool runUntil(boost::asio::io_context& io, const std::function<bool()>& done,
                     std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= end) return false;
    if (io.stopped()) io.restart();
    io.run_one_for(std::chrono::milliseconds(10));
  }
  return true;
}

// Runs handlers for a while (to show that something does NOT happen).
inline void runFor(boost::asio::io_context& io, std::chrono::milliseconds duration) {
  const auto end = std::chrono::steady_clock::now() + duration;
  while (std::chrono::steady_clock::now() < end) {
    if (io.stopped()) io.restart();
    io.run_one_until(end);
  }
}

}  // namespace leasehold::net::test
