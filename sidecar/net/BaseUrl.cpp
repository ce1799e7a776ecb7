#include "net/BaseUrl.h"

#include <arpa/inet.h>

#include <charconv>

namespace leasehold::net {
namespace {

bool isIpv4Literal(const std::string& host) {
  in_addr address{};
  return inet_pton(AF_INET, host.c_str(), &address) == 1;
}

bool isIpv6Literal(const std::string& host) {
  in6_addr address{};
  return inet_pton(AF_INET6, host.c_str(), &address) == 1;
}

std::optional<BaseUrl> fail(std::string* error, std::string message) {
  if (error) *error = std::move(message);
  return std::nullopt;
}

}  // namespace

std::optional<BaseUrl> BaseUrl::parse(std::string_view url, std::string* error) {
  BaseUrl result;
  const std::string quoted = "\"" + std::string(url) + "\"";
  if (url.starts_with("https://")) {
    url.remove_prefix(8);
    result.tls = true;
  } else if (url.starts_with("http://")) {
    url.remove_prefix(7);
    result.tls = false;
  } else {
    return fail(error, "server URL " + quoted + " must start with https:// or http://");
  }
  const auto slash = url.find('/');
  std::string_view authority = url.substr(0, slash);
  if (slash != std::string_view::npos) {
    std::string_view path = url.substr(slash);
    if (path.find_first_of("?#") != std::string_view::npos) {
      return fail(error, "server URL " + quoted + " must not carry a query or fragment");
    }
    while (!path.empty() && path.back() == '/')
      path.remove_suffix(1);
    result.pathPrefix = std::string(path);
  }
  if (authority.find('@') != std::string_view::npos) {
    return fail(error, "server URL must not contain user information");
  }
  std::string_view portText;
  if (authority.starts_with("[")) {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) {
      return fail(error, "server URL " + quoted + " has an unterminated IPv6 address");
    }
    result.host = std::string(authority.substr(1, close - 1));
    const auto rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') return fail(error, "server URL " + quoted + " is malformed");
      portText = rest.substr(1);
    }
    if (!isIpv6Literal(result.host)) {
      return fail(error, "server URL " + quoted + " has an invalid IPv6 address");
    }
    result.hostIsIpLiteral = true;
  } else {
    const auto colon = authority.find(':');
    result.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) portText = authority.substr(colon + 1);
    if (result.host.find_first_of(" \t\r\n[]") != std::string::npos) {
      return fail(error, "server URL " + quoted + " has an invalid host");
    }
    result.hostIsIpLiteral = isIpv4Literal(result.host);
  }
  if (result.host.empty()) return fail(error, "server URL " + quoted + " has no host");

  const std::uint16_t defaultPort = result.tls ? 443 : 80;
  result.port = defaultPort;
  if (!portText.empty()) {
    unsigned value = 0;
    const auto [end, ec] =
        std::from_chars(portText.data(), portText.data() + portText.size(), value);
    if (ec != std::errc() || end != portText.data() + portText.size() || value == 0 ||
        value > 65535) {
      return fail(error, "server URL " + quoted + " has an invalid port");
    }
    result.port = static_cast<std::uint16_t>(value);
  }
  const bool bracket = result.host.find(':') != std::string::npos;
  result.hostHeader = bracket ? "[" + result.host + "]" : result.host;
  if (result.port != defaultPort) result.hostHeader += ":" + std::to_string(result.port);
  return result;
}

}  // namespace leasehold::net
