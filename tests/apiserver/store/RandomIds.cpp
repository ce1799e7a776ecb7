// Name suffixes and UIDs (see RandomIds.h).
#include "store/RandomIds.h"

#include <cstdint>
#include <cstdio>
#include <random>

namespace apiserver {

static std::mt19937_64& rng() {
  static std::mt19937_64 r{std::random_device{}()};
  return r;
}

std::string random_suffix(size_t n) {
  static const char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
  std::string s;
  for (size_t i = 0; i < n; ++i)
    s += kAlphabet[rng()() % (sizeof kAlphabet - 1)];
  return s;
}

std::string new_uuid() {
  uint64_t a = rng()(), b = rng()();
  a = (a & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;
  b = (b & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;
  char buf[40];
  std::snprintf(buf, sizeof buf, "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(a >> 32),
                static_cast<unsigned>((a >> 16) & 0xffff), static_cast<unsigned>(a & 0xffff),
                static_cast<unsigned>(b >> 48),
                static_cast<unsigned long long>(b & 0xffffffffffffULL));
  return buf;
}

}  // namespace apiserver
