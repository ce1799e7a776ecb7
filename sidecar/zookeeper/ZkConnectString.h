#pragma once
// The connect string of a ZooKeeper ensemble, as ZooKeeper's own clients take it:
// "host:port[,host:port...][/chroot]". A missing port is 2181; an IPv6 literal goes in
// brackets ("[::1]:2181"); a chroot of "/" is none.
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace leasehold::zookeeper {

// One server of a connect string.
struct ZkServerAddress {
  std::string host;  // name or IP literal, without brackets
  std::uint16_t port = 2181;
  std::string text() const;  // "host:port", "[::1]:port"
  bool operator==(const ZkServerAddress&) const = default;
};

struct ZkConnectString {
  std::vector<ZkServerAddress> servers;
  std::string chroot;  // "" or "/a/b" (no trailing slash)
};

// The parsed string, or an error that names the bad part.
std::variant<ZkConnectString, std::string> parseConnectString(const std::string& text);

}  // namespace leasehold::zookeeper
