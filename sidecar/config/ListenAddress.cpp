#include "config/ListenAddress.h"

#include <arpa/inet.h>

#include <cctype>

namespace leasehold::config {

namespace {

ConfigError invalid(std::string_view text, const std::string& why) {
  return ConfigError{"\"" + std::string(text) + "\" is not a valid host:port: " + why};
}

bool isHostName(std::string_view host) {
  for (const char c : host) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

std::string ListenAddress::toString() const {
  const bool ipv6 = host.find(':') != std::string::npos;
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::variant<ListenAddress, ConfigError> ListenAddress::parse(std::string_view text) {
  ListenAddress address;
  std::string_view portText;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos) return invalid(text, "missing ']'");
    address.host = std::string(text.substr(1, close - 1));
    if (close + 1 >= text.size() || text[close + 1] != ':') {
      return invalid(text, "missing :port after ']'");
    }
    portText = text.substr(close + 2);
    in6_addr ignored{};
    if (inet_pton(AF_INET6, address.host.c_str(), &ignored) != 1) {
      return invalid(text, "\"" + address.host + "\" is not an IPv6 address");
    }
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) return invalid(text, "missing :port");
    address.host = std::string(text.substr(0, colon));
    portText = text.substr(colon + 1);
    if (address.host.find(':') != std::string::npos) {
      return invalid(text, "put an IPv6 address in brackets, e.g. [::1]:4040");
    }
    if (address.host.empty()) {
      return invalid(text, "missing host (use 0.0.0.0 for all IPv4 interfaces or [::] for all)");
    }
    if (!isHostName(address.host)) {
      return invalid(text, "\"" + address.host + "\" is not an IP address or host name");
    }
    // The server binds an address, not a name; and contrib leader-elector's manifests say
    // --http=localhost:4040. Go binds 127.0.0.1 for it, and so do we.
    std::string lower = address.host;
    for (char& c : lower)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower == "localhost") address.host = "127.0.0.1";
  }
  if (portText.empty() || portText.size() > 5) return invalid(text, "port must be 1-65535");
  unsigned port = 0;
  for (const char c : portText) {
    if (c < '0' || c > '9') return invalid(text, "port must be 1-65535");
    port = port * 10 + static_cast<unsigned>(c - '0');
  }
  if (port == 0 || port > 65535) return invalid(text, "port must be 1-65535");
  address.port = static_cast<std::uint16_t>(port);
  return address;
}

}  // namespace leasehold::config
