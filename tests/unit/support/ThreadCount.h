#pragma once
// How many threads this process runs now (/proc/self/task): the tests of the two-thread budget
// (the loop and the BlockingWorker) count with it.
#include <cstddef>
#include <filesystem>

namespace leasehold::testing {

inline std::size_t threadsInProcess() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task"))
    n++;
  return n;
}

}  // namespace leasehold::testing
