#include "inject/InjectorParams.h"

#include <charconv>
#include <optional>
#include <utility>

namespace leasehold::inject {

namespace {

std::optional<int> portNumber(const std::string& text) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 1 || value > 65535) {
    return std::nullopt;
  }
  return value;
}

}  // namespace

std::variant<InjectorParams, std::string> InjectorParams::fromData(
    const std::map<std::string, std::string>& data) {
  InjectorParams params;
  const std::pair<const char*, std::string*> fields[] = {
      {"image", &params.image},
      {"imagePullPolicy", &params.imagePullPolicy},
      {"leaseDuration", &params.leaseDuration},
      {"renewDeadline", &params.renewDeadline},
      {"retryPeriod", &params.retryPeriod},
      {"httpPort", &params.httpPort},
      {"probePort", &params.probePort},
      {"logFormat", &params.logFormat},
      {"logLevel", &params.logLevel},
  };
  for (const auto& [key, field] : fields) {
    const auto it = data.find(key);
    if (it == data.end()) return std::string("key ") + key + " is missing";
    if (it->second.empty()) return std::string("key ") + key + " is empty";
    *field = it->second;
  }
  const std::pair<const char*, std::string*> quantities[] = {
      {"cpuRequest", &params.cpuRequest},
      {"memoryRequest", &params.memoryRequest},
      {"cpuLimit", &params.cpuLimit},
      {"memoryLimit", &params.memoryLimit},
  };
  for (const auto& [key, field] : quantities) {
    const auto it = data.find(key);
    if (it != data.end()) *field = it->second;
  }
  for (const auto& [key, text] :
       {std::pair<const char*, const std::string*>{"httpPort", &params.httpPort},
        {"probePort", &params.probePort}}) {
    if (!portNumber(*text)) {
      return std::string("key ") + key + ": \"" + *text + "\" is not a port number (1 to 65535)";
    }
  }
  params.probePortNumber = *portNumber(params.probePort);
  return params;
}

}  // namespace leasehold::inject
