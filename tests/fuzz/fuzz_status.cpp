// Status bodies (API errors, watch ERROR events): decodeStatus on arbitrary bytes. A body that
// decodes must decode the same inside a watch ERROR event, and its code is never a wrapped number.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "FuzzCheck.h"
#include "kube/LeaseCodec.h"

#include <nlohmann/json.hpp>

using namespace leasehold;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  kube::ApiStatus status;
  if (!kube::decodeStatus(text, status)) return 0;

  // One line, as a watch stream carries it (the same JSON value, re-serialised compactly).
  const auto value = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  FUZZ_CHECK(value.is_object(), "decodeStatus accepted something that is not a JSON object");
  // The code is the JSON integer when it fits an int, never a wrapped-around value; else 0.
  const auto code = value.find("code");
  if (code != value.end() && code->is_number_integer()) {
    const bool fits = code->is_number_unsigned() ? code->get<std::uint64_t>() <= INT32_MAX
                                                 : code->get<std::int64_t>() >= INT32_MIN &&
                                                       code->get<std::int64_t>() <= INT32_MAX;
    FUZZ_CHECK(status.code == (fits ? code->get<int>() : 0),
               "code " + code->dump() + " decoded as " + std::to_string(status.code));
  }
  const std::string line = "{\"type\":\"ERROR\",\"object\":" + value.dump() + "}";
  kube::WatchEvent event;
  std::string error;
  FUZZ_CHECK(kube::decodeWatchEvent(line, event, error),
             "a Status body is rejected as a watch ERROR object: " + error);
  FUZZ_CHECK(event.type == kube::WatchEvent::Type::kError && event.status,
             "a watch ERROR event without a status");
  FUZZ_CHECK(event.status->code == status.code && event.status->reason == status.reason &&
                 event.status->message == status.message,
             "the Status decodes differently inside a watch event");
  return 0;
}
