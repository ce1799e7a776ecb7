#pragma once
// A local address to listen on, written host:port ("127.0.0.1:4040", "[::1]:4040",
// "localhost:4040", which means 127.0.0.1). IPv6 literals need brackets so the port is
// unambiguous.
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "config/ConfigError.h"

namespace leasehold::config {

struct ListenAddress {
  std::string host;  // without brackets
  std::uint16_t port = 0;

  // host:port, with brackets around an IPv6 host.
  std::string toString() const;

  static std::variant<ListenAddress, ConfigError> parse(std::string_view text);

  friend bool operator==(const ListenAddress&, const ListenAddress&) = default;
};

}  // namespace leasehold::config
