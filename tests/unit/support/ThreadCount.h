#pragma once
// How many threads this process runs now (/proc/self/task): the tests of the two-thread budget
// (the loop and the BlockingWorker) count with it.
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <thread>

namespace leasehold::testing {

inline std::size_t threadsInProcess() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task"))
    n++;
  return n;
}

// The thread count once it has come down to `expected`, or what it is after `bound`. A joined
// thread can still be listed for a moment: pthread_join returns when the kernel clears the
// thread's tid, which happens before the task is released from /proc/self/task.
inline std::size_t threadsInProcessOnceDownTo(
    std::size_t expected, std::chrono::milliseconds bound = std::chrono::seconds(5)) {
  const auto until = std::chrono::steady_clock::now() + bound;
  auto n = threadsInProcess();
  while (n > expected && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    n = threadsInProcess();
  }
  return n;
}

}  // namespace leasehold::testing
