#include "kubectl/LeaseRow.h"

#include <nlohmann/json.hpp>

#include "kube/LeaseCodec.h"

namespace leasehold::kubectl {
namespace {

using json = nlohmann::json;

bool rowFromObject(const json& obj, time::WallTime now, LeaseRow& out, std::string& error) {
  election::LeaseRecord record;
  if (!kube::decodeLease(obj.dump(), record, error)) return false;
  const json* meta = obj.contains("metadata") ? &obj["metadata"] : nullptr;
  auto field = [meta](const char* key) {
    return meta && meta->is_object() && meta->contains(key) && (*meta)[key].is_string()
               ? (*meta)[key].get<std::string>()
               : std::string();
  };
  out = LeaseRow::from(field("namespace"), field("name"), std::move(record), now);
  return true;
}

}  // namespace

LeaseRow LeaseRow::from(std::string ns, std::string name, election::LeaseRecord lease,
                        time::WallTime now) {
  LeaseRow r;
  r.ns = std::move(ns);
  r.name = std::move(name);
  if (lease.renewTime) {
    r.renewedAgo = now - *lease.renewTime;
    if (lease.leaseDurationSeconds) {
      r.expiresIn = *lease.renewTime + std::chrono::seconds(*lease.leaseDurationSeconds) - now;
    }
  }
  if (lease.acquireTime) r.acquiredAgo = now - *lease.acquireTime;
  r.lease = std::move(lease);
  r.lease.opaque.clear();  // the rows are for display; the object is not needed any more
  return r;
}

bool decodeLeaseRow(std::string_view text, time::WallTime now, LeaseRow& out, std::string& error) {
  json obj = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!obj.is_object()) {
    error = "the answer is not a JSON object";
    return false;
  }
  return rowFromObject(obj, now, out, error);
}

bool decodeLeaseRows(std::string_view text, time::WallTime now, std::vector<LeaseRow>& out,
                     std::string& error) {
  json obj = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!obj.is_object() || !obj.contains("items") || !obj["items"].is_array()) {
    error = "the answer is not a LeaseList (no items array)";
    return false;
  }
  out.clear();
  std::size_t i = 0;
  for (const json& item : obj["items"]) {
    LeaseRow row;
    if (!rowFromObject(item, now, row, error)) {
      error = "items[" + std::to_string(i) + "]: " + error;
      return false;
    }
    out.push_back(std::move(row));
    ++i;
  }
  return true;
}

}  // namespace leasehold::kubectl
