#include "election/RendezvousScore.h"

namespace leasehold::election {

std::uint64_t rendezvousScore(std::size_t shard, std::string_view member) {
  std::uint64_t h = 14695981039346656037ull;  // FNV-1a 64
  const auto mix = [&h](unsigned char c) {
    h ^= c;
    h *= 1099511628211ull;
  };
  for (int i = 0; i < 8; i++)
    mix(static_cast<unsigned char>(static_cast<std::uint64_t>(shard) >> (8 * i)));
  for (char c : member)
    mix(static_cast<unsigned char>(c));
  // FNV's low bits mix poorly for short inputs: finish with splitmix64's finaliser.
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return h;
}

}  // namespace leasehold::election
