#include "zookeeper/ZkConnectString.h"

#include <algorithm>
#include <boost/asio/ip/address.hpp>
#include <cctype>

namespace leasehold::zookeeper {

std::string ZkServerAddress::text() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::variant<ZkConnectString, std::string> parseConnectString(const std::string& text) {
  ZkConnectString parsed;
  const std::string where = "connect string \"" + text + "\": ";
  std::string hosts = text;
  if (const auto slash = text.find('/'); slash != std::string::npos) {
    hosts = text.substr(0, slash);
    parsed.chroot = text.substr(slash);
    if (parsed.chroot == "/") {
      parsed.chroot.clear();
    } else if (parsed.chroot.back() == '/' || parsed.chroot.find("//") != std::string::npos) {
      return where + "bad chroot \"" + parsed.chroot + "\"";
    }
  }
  std::size_t from = 0;
  while (from <= hosts.size()) {
    const auto comma = hosts.find(',', from);
    const std::string part = hosts.substr(from, comma == std::string::npos ? comma : comma - from);
    from = comma == std::string::npos ? hosts.size() + 1 : comma + 1;
    if (part.empty()) return where + "an empty server";
    ZkServerAddress server;
    std::string portText;
    if (part.front() == '[') {
      const auto close = part.find(']');
      if (close == std::string::npos) return where + "unclosed '[' in \"" + part + "\"";
      server.host = part.substr(1, close - 1);
      const std::string after = part.substr(close + 1);
      if (!after.empty()) {
        if (after.front() != ':') return where + "bad server \"" + part + "\"";
        portText = after.substr(1);
        if (portText.empty()) return where + "empty port in \"" + part + "\"";
      }
      boost::system::error_code ec;
      boost::asio::ip::make_address_v6(server.host, ec);
      if (ec) return where + "bad IPv6 address in \"" + part + "\"";
    } else {
      const auto colon = part.find(':');
      server.host = part.substr(0, colon);
      if (colon != std::string::npos) {
        portText = part.substr(colon + 1);
        if (portText.empty()) return where + "empty port in \"" + part + "\"";
      }
      if (portText.find(':') != std::string::npos) {
        return where + "bad server \"" + part + "\" (an IPv6 address goes in brackets)";
      }
    }
    if (server.host.empty()) return where + "empty host in \"" + part + "\"";
    if (!portText.empty()) {
      unsigned long port = 0;
      const bool digits =
          portText.size() <= 5 && std::all_of(portText.begin(), portText.end(), [](char c) {
            return std::isdigit(static_cast<unsigned char>(c)) != 0;
          });
      if (digits) port = std::stoul(portText);
      if (!digits || port == 0 || port > 65535) {
        return where + "bad port in \"" + part + "\"";
      }
      server.port = static_cast<std::uint16_t>(port);
    }
    parsed.servers.push_back(std::move(server));
  }
  return parsed;
}

}  // namespace leasehold::zookeeper
