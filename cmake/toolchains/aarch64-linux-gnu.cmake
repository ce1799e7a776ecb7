# Cross-compiles for linux/arm64 (aarch64) on a Debian amd64 machine with Debian's crossbuild
# toolchain and the arm64 libraries that `scripts/install-deps.sh --arm64` installs (the
# `release-arm64` preset in CMakePresets.json uses this file; README "Building from source").
#
# Where things are found:
# - the compiler, aarch64-linux-gnu-g++ (crossbuild-essential-arm64), searches the arm64
#   multiarch folders itself (/usr/include/aarch64-linux-gnu, /usr/lib/aarch64-linux-gnu), and
#   CMake takes CMAKE_LIBRARY_ARCHITECTURE=aarch64-linux-gnu from it, so find_library and
#   find_package look in /usr/lib/aarch64-linux-gnu and never in amd64's x86_64-linux-gnu:
#   OpenSSL, GoogleTest and Boost's CMake config come from their `:arm64` packages;
# - yaml-cpp's arm64 -dev package cannot be installed beside the amd64 one (not Multi-Arch:
#   same), so install-deps unpacks it into LEASEHOLD_ARM64_YAML_CPP, searched first;
# - pkg-config (FindOpenSSL asks it first) reads arm64's .pc files only: the build machine's
#   pkg-config would name amd64's libcrypto.a, which the linker then refuses;
# - amd64's library and header folders are ignored by every find_* command, so that nothing
#   amd64 slips in by another way;
# - programs (find_program: python3, openssl, helm) are the build machine's.
#
# Built programs cannot run here natively: CMAKE_CROSSCOMPILING_EMULATOR runs them under
# qemu-user-static, which is what ctest does for every test command naming a target and what
# gtest_discover_tests does to list a unit test binary's cases at build time. Without `-L`:
# the programs then run on the arm64 glibc of the multiarch package libc6:arm64 (its loader
# /lib/ld-linux-aarch64.so.1 and /lib/aarch64-linux-gnu/libc.so.6, one build of glibc).
# `-L /usr/aarch64-linux-gnu` would take the loader from the cross toolchain's own glibc
# (libc6-arm64-cross, another build), which still finds libc.so.6 through /etc/ld.so.cache in
# /lib/aarch64-linux-gnu: a loader and a libc from two builds, and every pthread_create then
# spins for ever (measured: the first std::thread of a unit test binary never started).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

set(LEASEHOLD_ARM64_YAML_CPP /opt/leasehold/arm64-yaml-cpp/usr CACHE PATH
  "Prefix of the unpacked arm64 yaml-cpp (scripts/install-deps.sh --arm64)")
if(NOT EXISTS "${LEASEHOLD_ARM64_YAML_CPP}/lib/aarch64-linux-gnu/libyaml-cpp.a")
  message(FATAL_ERROR "LEASEHOLD_ARM64_YAML_CPP=${LEASEHOLD_ARM64_YAML_CPP}: no arm64 "
    "libyaml-cpp.a there (run scripts/install-deps.sh --arm64)")
endif()
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
list(APPEND CMAKE_IGNORE_PATH /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu
  /usr/include/x86_64-linux-gnu)
list(PREPEND CMAKE_PREFIX_PATH "${LEASEHOLD_ARM64_YAML_CPP}")

find_program(LEASEHOLD_QEMU_AARCH64 qemu-aarch64-static)
if(NOT LEASEHOLD_QEMU_AARCH64)
  message(FATAL_ERROR "qemu-aarch64-static not found: the arm64 build runs its tests under it "
    "(run scripts/install-deps.sh --arm64)")
endif()
if(NOT EXISTS /lib/ld-linux-aarch64.so.1)
  message(FATAL_ERROR "/lib/ld-linux-aarch64.so.1 missing: the arm64 glibc (libc6:arm64) runs "
    "the tests under qemu (run scripts/install-deps.sh --arm64)")
endif()
# -E: the tests of the few kernel interfaces that qemu-user emulates incompletely skip, saying
# why (tests/unit/support/Emulation.h).
set(CMAKE_CROSSCOMPILING_EMULATOR "${LEASEHOLD_QEMU_AARCH64};-E;LEASEHOLD_TEST_EMULATOR=qemu-user")
