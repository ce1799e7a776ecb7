#include "kube/LeaseCodec.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <chrono>

#include "kube/JsonFields.h"

namespace leasehold::kube {
namespace {

using election::LeaseRecord;
using json_fields::member;
using json_fields::readString;
using nlohmann::json;
using time::WallTime;

bool digits(std::string_view s, std::size_t pos, std::size_t n, int& out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (std::size_t i = pos; i < pos + n; i++) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  out = v;
  return true;
}

bool readTime(const json& obj, const char* key, const std::string& path,
              std::optional<WallTime>& out, std::string& error) {
  const json* v = member(obj, key);
  if (!v) return true;
  if (!v->is_string()) {
    error = path + key + ": expected a MicroTime string";
    return false;
  }
  out = parseMicroTime(v->get_ref<const std::string&>());
  if (!out) {
    error = path + key + ": not a valid MicroTime: " + v->get<std::string>();
    return false;
  }
  return true;
}

bool readInt32(const json& obj, const char* key, const std::string& path,
               std::optional<std::int32_t>& out, std::string& error) {
  const json* v = member(obj, key);
  if (!v) return true;
  if (!v->is_number_integer()) {
    error = path + key + ": expected an integer";
    return false;
  }
  const auto n = v->get<std::int64_t>();
  // An unsigned above INT64_MAX would wrap to a negative n.
  if (n < INT32_MIN || n > INT32_MAX || (v->is_number_unsigned() && n < 0)) {
    error = path + key + ": out of int32 range";
    return false;
  }
  out = static_cast<std::int32_t>(n);
  return true;
}

bool decodeLeaseObject(const json& obj, LeaseRecord& out, std::string& error) {
  if (!obj.is_object()) {
    error = "lease: expected an object";
    return false;
  }
  LeaseRecord r;
  const json* meta = member(obj, "metadata");
  if (meta) {
    if (!meta->is_object()) {
      error = "metadata: expected an object";
      return false;
    }
    if (!readString(*meta, "resourceVersion", "metadata.", r.resourceVersion.value, error))
      return false;
    if (const json* ann = member(*meta, "annotations"); ann && ann->is_object()) {
      if (!readString(*ann, kHolderPodAnnotation, "metadata.annotations.", r.holderPod, error))
        return false;
      if (!readString(*ann, kHolderAddressAnnotation, "metadata.annotations.", r.holderAddress,
                      error))
        return false;
      if (!readString(*ann, kHolderProcessAnnotation, "metadata.annotations.", r.holderProcess,
                      error))
        return false;
      if (!readString(*ann, kPreferredHolderAnnotation, "metadata.annotations.", r.preferredHolder,
                      error))
        return false;
    }
  }
  if (const json* spec = member(obj, "spec")) {
    if (!spec->is_object()) {
      error = "spec: expected an object";
      return false;
    }
    std::optional<std::int32_t> transitions;
    if (!readString(*spec, "holderIdentity", "spec.", r.holderIdentity, error) ||
        !readInt32(*spec, "leaseDurationSeconds", "spec.", r.leaseDurationSeconds, error) ||
        !readInt32(*spec, "leaseTransitions", "spec.", transitions, error) ||
        !readTime(*spec, "acquireTime", "spec.", r.acquireTime, error) ||
        !readTime(*spec, "renewTime", "spec.", r.renewTime, error)) {
      return false;
    }
    r.leaseTransitions = transitions.value_or(0);
    // spec.preferredHolder, where the server keeps it, wins over the annotation.
    std::string preferred;
    if (!readString(*spec, "preferredHolder", "spec.", preferred, error)) return false;
    if (!preferred.empty()) r.preferredHolder = preferred;
  }
  r.opaque = obj.dump();
  out = std::move(r);
  return true;
}

template <class F>
bool parseJson(std::string_view text, json& out, std::string& error, F&& what) {
  out = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (out.is_discarded()) {
    error = std::string(what) + ": not valid JSON";
    return false;
  }
  return true;
}

}  // namespace

std::optional<WallTime> parseMicroTime(std::string_view s) {
  using namespace std::chrono;
  int y, mo, d, h, mi, sec;
  if (s.size() < 20 || !digits(s, 0, 4, y) || s[4] != '-' || !digits(s, 5, 2, mo) || s[7] != '-' ||
      !digits(s, 8, 2, d) || (s[10] != 'T' && s[10] != 't') || !digits(s, 11, 2, h) ||
      s[13] != ':' || !digits(s, 14, 2, mi) || s[16] != ':' || !digits(s, 17, 2, sec)) {
    return std::nullopt;
  }
  std::size_t pos = 19;
  std::int64_t micros = 0;
  if (pos < s.size() && s[pos] == '.') {
    pos++;
    int n = 0;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      if (n < 6) micros = micros * 10 + (s[pos] - '0');
      n++;
      pos++;
    }
    if (n == 0) return std::nullopt;
    for (int i = n; i < 6; i++)
      micros *= 10;
  }
  if (pos >= s.size()) return std::nullopt;
  int offsetMinutes = 0;
  if (s[pos] == 'Z' || s[pos] == 'z') {
    pos++;
  } else if (s[pos] == '+' || s[pos] == '-') {
    int oh, om;
    if (!digits(s, pos + 1, 2, oh) || pos + 3 >= s.size() || s[pos + 3] != ':' ||
        !digits(s, pos + 4, 2, om)) {
      return std::nullopt;
    }
    offsetMinutes = (s[pos] == '+' ? 1 : -1) * (oh * 60 + om);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != s.size()) return std::nullopt;
  const year_month_day ymd{year(y), month(static_cast<unsigned>(mo)),
                           day(static_cast<unsigned>(d))};
  if (!ymd.ok() || h > 23 || mi > 59 || sec > 60) return std::nullopt;
  const WallTime t = WallTime(sys_days(ymd)) + hours(h) + minutes(mi) + seconds(sec) +
                     microseconds(micros) - minutes(offsetMinutes);
  // An offset can move the instant out of 0000-9999, which neither Go nor formatMicroTime writes.
  const year utcYear = year_month_day{floor<days>(t)}.year();
  if (utcYear < year(0) || utcYear > year(9999)) return std::nullopt;
  return t;
}

bool decodeLease(std::string_view text, LeaseRecord& out, std::string& error) {
  json obj;
  if (!parseJson(text, obj, error, "lease")) return false;
  return decodeLeaseObject(obj, out, error);
}

std::string encodeLease(const LeaseRecord& r, const LeaseTarget& target, bool forCreate) {
  json obj = r.opaque.empty() ? json::object()
                              : json::parse(r.opaque, nullptr, /*allow_exceptions=*/false);
  if (!obj.is_object()) obj = json::object();
  obj["apiVersion"] = "coordination.k8s.io/v1";
  obj["kind"] = "Lease";
  json& meta = obj["metadata"];
  if (!meta.is_object()) meta = json::object();
  meta["name"] = target.name;
  meta["namespace"] = target.ns;
  if (forCreate) {
    for (const char* k : {"resourceVersion", "uid", "creationTimestamp", "managedFields"})
      meta.erase(k);
  } else {
    meta["resourceVersion"] = r.resourceVersion.value;
  }
  if (!target.labels.empty()) {
    json& labels = meta["labels"];
    if (!labels.is_object()) labels = json::object();
    for (const auto& [key, value] : target.labels)
      labels[key] = value;
  }
  // The holder's annotations follow the holder: set by the holder, dropped on release.
  if (!r.holderIdentity.empty() && (!target.podName.empty() || !target.podIp.empty())) {
    json& ann = meta["annotations"];
    if (!ann.is_object()) ann = json::object();
    if (!target.podName.empty()) ann[kHolderPodAnnotation] = target.podName;
    if (!target.podIp.empty()) ann[kHolderAddressAnnotation] = target.podIp;
  } else if (r.holderIdentity.empty() && meta.contains("annotations") &&
             meta["annotations"].is_object()) {
    meta["annotations"].erase(kHolderPodAnnotation);
    meta["annotations"].erase(kHolderAddressAnnotation);
    if (meta["annotations"].empty()) meta.erase("annotations");
  }
  // Never left behind by a write that does not set it: a follower would ask about a process
  // that no longer holds the Lease (the identity in it is checked too).
  if (!r.holderIdentity.empty() && !target.podUid.empty() && !target.container.empty()) {
    json& ann = meta["annotations"];
    if (!ann.is_object()) ann = json::object();
    ann[kHolderProcessAnnotation] = target.podUid + "/" + target.container + "/" + r.holderIdentity;
  } else if (meta.contains("annotations") && meta["annotations"].is_object()) {
    meta["annotations"].erase(kHolderProcessAnnotation);
    if (meta["annotations"].empty()) meta.erase("annotations");
  }
  json& spec = obj["spec"];
  if (!spec.is_object()) spec = json::object();
  // The election only ever removes a handover request (the new holder does); an operator sets it.
  if (r.preferredHolder.empty()) {
    spec.erase("preferredHolder");
    if (meta.contains("annotations") && meta["annotations"].is_object()) {
      meta["annotations"].erase(kPreferredHolderAnnotation);
      if (meta["annotations"].empty()) meta.erase("annotations");
    }
  }
  spec["holderIdentity"] = r.holderIdentity;
  if (r.leaseDurationSeconds) {
    spec["leaseDurationSeconds"] = *r.leaseDurationSeconds;
  } else {
    spec.erase("leaseDurationSeconds");
  }
  if (r.acquireTime) spec["acquireTime"] = time::formatMicroTime(*r.acquireTime);
  if (r.renewTime) spec["renewTime"] = time::formatMicroTime(*r.renewTime);
  spec["leaseTransitions"] = r.leaseTransitions;
  return obj.dump();
}

bool decodeLeaseList(std::string_view text, const std::string& name, LeaseListResult& out,
                     std::string& error) {
  json obj;
  if (!parseJson(text, obj, error, "lease list")) return false;
  LeaseListResult result;
  if (const json* meta = member(obj, "metadata")) {
    if (!readString(*meta, "resourceVersion", "metadata.", result.resourceVersion, error))
      return false;
  }
  const json* items = member(obj, "items");
  if (items && !items->is_array()) {
    error = "items: expected a list";
    return false;
  }
  if (items) {
    for (std::size_t i = 0; i < items->size(); i++) {
      const json& item = (*items)[i];
      const json* meta = member(item, "metadata");
      const json* itemName = meta ? member(*meta, "name") : nullptr;
      if (!itemName || !itemName->is_string() || itemName->get_ref<const std::string&>() != name)
        continue;
      LeaseRecord r;
      if (!decodeLeaseObject(item, r, error)) {
        error = "items[" + std::to_string(i) + "]." + error;
        return false;
      }
      // Items in a list carry no kind/apiVersion; writes add them back.
      result.item = std::move(r);
    }
  }
  out = std::move(result);
  return true;
}

bool decodeLeaseListItems(std::string_view text, std::string& resourceVersion,
                          std::vector<NamedLease>& out, std::string& error) {
  json obj;
  if (!parseJson(text, obj, error, "lease list")) return false;
  std::string rv;
  if (const json* meta = member(obj, "metadata")) {
    if (!readString(*meta, "resourceVersion", "metadata.", rv, error)) return false;
  }
  const json* items = member(obj, "items");
  if (items && !items->is_array()) {
    error = "items: expected a list";
    return false;
  }
  std::vector<NamedLease> result;
  for (std::size_t i = 0; items && i < items->size(); i++) {
    const json& item = (*items)[i];
    const json* meta = member(item, "metadata");
    const json* itemName = meta ? member(*meta, "name") : nullptr;
    if (!itemName || !itemName->is_string()) continue;
    NamedLease named{itemName->get<std::string>(), {}};
    if (!decodeLeaseObject(item, named.record, error)) {
      error = "items[" + std::to_string(i) + "]." + error;
      return false;
    }
    result.push_back(std::move(named));
  }
  resourceVersion = std::move(rv);
  out = std::move(result);
  return true;
}

bool decodeStatus(std::string_view text, ApiStatus& out) {
  json obj = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!obj.is_object()) return false;
  const json* kind = member(obj, "kind");
  if (!kind || !kind->is_string() || kind->get_ref<const std::string&>() != "Status") return false;
  ApiStatus s;
  std::string ignored;
  readString(obj, "reason", "", s.reason, ignored);
  readString(obj, "message", "", s.message, ignored);
  // Not an integer, or one that does not fit (it must not wrap around to, say, 409): 0.
  std::optional<std::int32_t> code;
  readInt32(obj, "code", "", code, ignored);
  s.code = code.value_or(0);
  out = std::move(s);
  return true;
}

bool decodeWatchEvent(std::string_view line, WatchEvent& out, std::string& error,
                      WatchObjects objects) {
  json obj;
  if (!parseJson(line, obj, error, "watch event")) return false;
  const json* type = member(obj, "type");
  const json* object = member(obj, "object");
  if (!type || !type->is_string()) {
    error = "watch event: type: expected a string";
    return false;
  }
  if (!object || !object->is_object()) {
    error = "watch event: object: expected an object";
    return false;
  }
  const std::string& t = type->get_ref<const std::string&>();
  WatchEvent e;
  if (t == "ADDED") {
    e.type = WatchEvent::Type::kAdded;
  } else if (t == "MODIFIED") {
    e.type = WatchEvent::Type::kModified;
  } else if (t == "DELETED") {
    e.type = WatchEvent::Type::kDeleted;
  } else if (t == "BOOKMARK") {
    e.type = WatchEvent::Type::kBookmark;
  } else if (t == "ERROR") {
    e.type = WatchEvent::Type::kError;
    ApiStatus s;
    if (!decodeStatus(object->dump(), s)) {
      error = "watch event: ERROR object is not a Status";
      return false;
    }
    e.status = std::move(s);
    out = std::move(e);
    return true;
  } else {
    error = "watch event: unknown type " + t;
    return false;
  }
  if (const json* meta = member(*object, "metadata")) {
    if (!readString(*meta, "resourceVersion", "object.metadata.", e.resourceVersion, error))
      return false;
    if (!readString(*meta, "name", "object.metadata.", e.name, error)) return false;
  }
  if (e.type != WatchEvent::Type::kBookmark && objects == WatchObjects::kOther) {
    e.object = object->dump();
  } else if (e.type != WatchEvent::Type::kBookmark) {
    election::LeaseRecord r;
    if (!decodeLeaseObject(*object, r, error)) {
      error = "watch event: object." + error;
      return false;
    }
    e.lease = std::move(r);
  }
  out = std::move(e);
  return true;
}

}  // namespace leasehold::kube
