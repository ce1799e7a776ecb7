#pragma once
// The name of the user-mode emulator these tests run under, or nullptr when they run natively.
// The arm64 build's unit tests run under qemu-user (the `release-arm64` preset), whose command,
// cmake/toolchains/aarch64-linux-gnu.cmake's CMAKE_CROSSCOMPILING_EMULATOR, sets
// LEASEHOLD_TEST_EMULATOR=qemu-user in the test's environment. qemu-user 7.2 (Debian bookworm)
// emulates a few kernel interfaces incompletely; the tests of exactly those skip there, saying
// which, and run everywhere else (on amd64 in the gate, and on arm64 hardware).
#include <cstdlib>

namespace leasehold::testing_support {

inline const char* userModeEmulator() {
  const char* name = std::getenv("LEASEHOLD_TEST_EMULATOR");
  return name != nullptr && *name != '\0' ? name : nullptr;
}

}  // namespace leasehold::testing_support
