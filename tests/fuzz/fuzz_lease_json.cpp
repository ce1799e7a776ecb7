// Lease JSON: decodeLease, decodeLeaseList and parseMicroTime on arbitrary bytes. Whatever
// decodes must survive the encodeLease round trip (FuzzCheck.h), and a MicroTime that parses must
// format and parse back to the same instant.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "FuzzCheck.h"
#include "kube/LeaseCodec.h"

#include <nlohmann/json.hpp>

using namespace leasehold;

namespace {

// The integers of the spec are the numbers the JSON holds (never wrapped into int32 range).
void checkIntegers(std::string_view text, const election::LeaseRecord& lease) {
  const auto obj = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  const auto spec = obj.find("spec");
  if (spec == obj.end() || !spec->is_object()) return;
  const auto same = [&](const char* key, std::int64_t decoded) {
    const auto value = spec->find(key);
    if (value == spec->end() || !value->is_number_integer()) return;
    const bool equal =
        value->is_number_unsigned()
            ? value->get<std::uint64_t>() == static_cast<std::uint64_t>(decoded) && decoded >= 0
            : value->get<std::int64_t>() == decoded;
    FUZZ_CHECK(equal, std::string("spec.") + key + " " + value->dump() + " decoded as " +
                          std::to_string(decoded));
  };
  if (lease.leaseDurationSeconds) same("leaseDurationSeconds", *lease.leaseDurationSeconds);
  same("leaseTransitions", lease.leaseTransitions);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string error;

  election::LeaseRecord lease;
  if (kube::decodeLease(text, lease, error)) {
    checkIntegers(text, lease);
    fuzz::checkLeaseRoundTrip(lease);
  }

  kube::LeaseListResult list;
  error.clear();
  if (kube::decodeLeaseList(text, "lease-a", list, error) && list.item) {
    fuzz::checkLeaseRoundTrip(*list.item);
  }

  if (size <= 64) {
    if (const auto time = kube::parseMicroTime(text)) {
      const std::string formatted = time::formatMicroTime(*time);
      const auto again = kube::parseMicroTime(formatted);
      FUZZ_CHECK(again && *again == *time, "MicroTime \"" + std::string(text) + "\" formats as \"" +
                                               formatted +
                                               "\", which does not parse back to the same instant");
    }
  }
  return 0;
}
