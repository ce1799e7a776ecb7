#pragma once
// The parsed server address a client talks to: "https://host[:port][/prefix]", IPv6 hosts in
// brackets; "http://" is accepted for tests and plain local servers.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace leasehold::net {

struct BaseUrl {
  bool tls = true;
  std::string host;        // without brackets: "10.0.0.1", "::1", "api.example.com"
  std::uint16_t port = 0;  // explicit or the scheme's default
  bool hostIsIpLiteral = false;
  std::string hostHeader;  // what goes into "Host:": brackets kept, port only when not default
  std::string pathPrefix;  // "" or "/prefix" without trailing slash; prepended to request targets

  // nullopt with *error set when the URL is not of the accepted form.
  static std::optional<BaseUrl> parse(std::string_view url, std::string* error);
};

}  // namespace leasehold::net
