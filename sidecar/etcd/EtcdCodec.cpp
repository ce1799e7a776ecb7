#include "etcd/EtcdCodec.h"

#include <charconv>
#include <nlohmann/json.hpp>

#include "net/Base64.h"

namespace leasehold::etcd {

using nlohmann::json;

namespace {

std::string b64(const std::string& bytes) {
  return net::Base64::encode(bytes);
}

std::optional<json> parseObject(std::string_view text, std::string& error) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    error = "not a JSON object";
    return std::nullopt;
  }
  return j;
}

// int64 fields: a decimal string (the gateway's form) or a JSON number; absent means 0.
template <class Int>
bool readInt(const json& obj, const char* field, Int& out, std::string& error) {
  out = 0;
  const auto it = obj.find(field);
  if (it == obj.end() || it->is_null()) return true;
  if (it->is_number_integer()) {
    if (it->is_number_unsigned()) {
      out = static_cast<Int>(it->get<std::uint64_t>());
    } else {
      out = static_cast<Int>(it->get<std::int64_t>());
    }
    return true;
  }
  if (it->is_string()) {
    const auto& s = it->get_ref<const std::string&>();
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    if (ec == std::errc() && end == s.data() + s.size() && !s.empty()) return true;
  }
  error = std::string(field) + ": not an integer";
  return false;
}

bool readBytes(const json& obj, const char* field, std::string& out, std::string& error) {
  out.clear();
  const auto it = obj.find(field);
  if (it == obj.end() || it->is_null()) return true;
  if (it->is_string()) {
    if (auto decoded = net::Base64::decode(it->get_ref<const std::string&>())) {
      out = std::move(*decoded);
      return true;
    }
  }
  error = std::string(field) + ": not base64";
  return false;
}

bool readBool(const json& obj, const char* field, bool& out, std::string& error) {
  out = false;
  const auto it = obj.find(field);
  if (it == obj.end() || it->is_null()) return true;
  if (it->is_boolean()) {
    out = it->get<bool>();
    return true;
  }
  error = std::string(field) + ": not a boolean";
  return false;
}

// The member `field` as an object (or an array); absent is an empty one.
bool readMember(const json& obj, const char* field, json::value_t type, json& out,
                std::string& error) {
  const auto it = obj.find(field);
  if (it == obj.end() || it->is_null()) {
    out = json(type);
    return true;
  }
  if (it->type() == type) {
    out = *it;
    return true;
  }
  error =
      std::string(field) + (type == json::value_t::array ? ": not an array" : ": not an object");
  return false;
}

bool readObject(const json& obj, const char* field, json& out, std::string& error) {
  return readMember(obj, field, json::value_t::object, out, error);
}

bool readArray(const json& obj, const char* field, json& out, std::string& error) {
  return readMember(obj, field, json::value_t::array, out, error);
}

// Prefixes the message with where it was found.
bool within(const std::string& where, bool ok, std::string& error) {
  if (!ok) error = where + "." + error;
  return ok;
}

bool readHeader(const json& obj, ResponseHeader& out, std::string& error) {
  json h;
  return within("header",
                readObject(obj, "header", h, error) &&
                    readInt(h, "revision", out.revision, error) &&
                    readInt(h, "member_id", out.memberId, error) &&
                    readInt(h, "raft_term", out.raftTerm, error),
                error);
}

bool readKeyValue(const json& obj, KeyValue& out, std::string& error) {
  if (!obj.is_object()) {
    error = "not an object";
    return false;
  }
  return readBytes(obj, "key", out.key, error) && readBytes(obj, "value", out.value, error) &&
         readInt(obj, "create_revision", out.createRevision, error) &&
         readInt(obj, "mod_revision", out.modRevision, error) &&
         readInt(obj, "version", out.version, error) && readInt(obj, "lease", out.lease, error);
}

bool readKeyValues(const json& obj, std::vector<KeyValue>& out, std::string& error) {
  json kvs;
  if (!readArray(obj, "kvs", kvs, error)) return false;
  out.clear();
  for (std::size_t i = 0; i < kvs.size(); i++) {
    KeyValue kv;
    if (!within("kvs[" + std::to_string(i) + "]", readKeyValue(kvs[i], kv, error), error)) {
      return false;
    }
    out.push_back(std::move(kv));
  }
  return true;
}

// A streaming method's answer wraps its message in "result" (lease/keepalive, watch).
bool unwrapResult(const json& obj, json& out, std::string& error) {
  const auto it = obj.find("result");
  if (it == obj.end() || !it->is_object()) {
    error = "result: missing";
    return false;
  }
  out = *it;
  return true;
}

}  // namespace

bool decodeGatewayError(std::string_view text, GatewayError& out) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return false;
  const json* body = &j;
  const char* codeField = "code";
  if (auto it = j.find("error"); it != j.end() && it->is_object()) {
    body = &*it;  // a stream's error: {"error": {"grpc_code", "http_code", "message"}}
    codeField = "grpc_code";
  }
  const auto code = body->find(codeField);
  if (code == body->end() || !code->is_number_integer()) return false;
  out.code = code->get<int>();
  const auto message = body->find("message");
  out.message = message != body->end() && message->is_string() ? message->get<std::string>() : "";
  return true;
}

std::string encodeAuthenticate(const std::string& user, const std::string& password) {
  return json{{"name", user}, {"password", password}}.dump();
}

std::string encodeLeaseGrant(std::int64_t ttlSeconds) {
  return json{{"TTL", std::to_string(ttlSeconds)}}.dump();
}

std::string encodeLeaseId(LeaseId id) {
  return json{{"ID", std::to_string(id)}}.dump();
}

std::string encodeCreateUnlessExists(const std::string& key, const std::string& value,
                                     LeaseId lease) {
  const std::string k = b64(key);
  return json{
      {"compare", json::array({{{"key", k}, {"target", "CREATE"}, {"create_revision", "0"}}})},
      {"success",
       json::array({{{"request_put",
                      {{"key", k}, {"value", b64(value)}, {"lease", std::to_string(lease)}}}}})},
      {"failure", json::array({{{"request_range", {{"key", k}}}}})}}
      .dump();
}

std::string encodeRangeByCreation(const std::string& prefix, std::int64_t limit, bool newestFirst,
                                  std::optional<Revision> createdBefore) {
  json j{{"key", b64(prefix)},
         {"range_end", b64(prefixEnd(prefix))},
         {"sort_order", newestFirst ? "DESCEND" : "ASCEND"},
         {"sort_target", "CREATE"}};
  if (limit > 0) j["limit"] = std::to_string(limit);
  // max_create_revision is inclusive.
  if (createdBefore) j["max_create_revision"] = std::to_string(*createdBefore - 1);
  return j.dump();
}

std::string encodeLinearizableCount(const std::string& key) {
  return json{{"key", b64(key)}, {"count_only", true}}.dump();
}

std::string encodeDeleteKey(const std::string& key) {
  return json{{"key", b64(key)}}.dump();
}

std::string encodeWatchCreate(const std::string& key, bool prefix, Revision fromRevision) {
  json create{{"key", b64(key)}};
  if (prefix) create["range_end"] = b64(prefixEnd(key));
  if (fromRevision > 0) create["start_revision"] = std::to_string(fromRevision);
  return json{{"create_request", create}}.dump();
}

std::string prefixEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    auto& last = end.back();
    if (static_cast<unsigned char>(last) < 0xff) {
      last = static_cast<char>(static_cast<unsigned char>(last) + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');
}

bool decodeAuthenticate(std::string_view text, std::string& token, std::string& error) {
  auto j = parseObject(text, error);
  if (!j) return false;
  const auto it = j->find("token");
  if (it == j->end() || !it->is_string() || it->get_ref<const std::string&>().empty()) {
    error = "token: missing";
    return false;
  }
  token = it->get<std::string>();
  return true;
}

bool decodeLeaseGrant(std::string_view text, LeaseGrant& out, std::string& error) {
  auto j = parseObject(text, error);
  if (!j || !readHeader(*j, out.header, error) || !readInt(*j, "ID", out.id, error) ||
      !readInt(*j, "TTL", out.ttlSeconds, error)) {
    return false;
  }
  if (out.id == 0 || out.ttlSeconds <= 0) {
    error = "no lease granted";
    return false;
  }
  return true;
}

bool decodeKeepAlive(std::string_view text, KeepAlive& out, std::string& error) {
  auto j = parseObject(text, error);
  json result;
  return j && unwrapResult(*j, result, error) &&
         within("result",
                readHeader(result, out.header, error) && readInt(result, "ID", out.id, error) &&
                    readInt(result, "TTL", out.ttlSeconds, error),
                error);
}

bool decodeRange(std::string_view text, Range& out, std::string& error) {
  auto j = parseObject(text, error);
  return j && readHeader(*j, out.header, error) && readKeyValues(*j, out.kvs, error) &&
         readInt(*j, "count", out.count, error);
}

bool decodeCreateUnlessExists(std::string_view text, const std::string& key,
                              const std::string& value, LeaseId lease, CreateUnlessExists& out,
                              std::string& error) {
  auto j = parseObject(text, error);
  json responses;
  if (!j || !readHeader(*j, out.header, error) || !readBool(*j, "succeeded", out.created, error) ||
      !readArray(*j, "responses", responses, error)) {
    return false;
  }
  if (responses.size() != 1 || !responses[0].is_object()) {
    error = "responses: not one response";
    return false;
  }
  if (out.created) {
    json put;
    ResponseHeader putHeader;
    if (!within("responses[0]",
                readObject(responses[0], "response_put", put, error) &&
                    readHeader(put, putHeader, error),
                error)) {
      return false;
    }
    out.kv = KeyValue{key, value, putHeader.revision, putHeader.revision, 1, lease};
    if (out.kv.createRevision <= 0) {
      error = "responses[0].response_put.header.revision: missing";
      return false;
    }
    return true;
  }
  json range;
  std::vector<KeyValue> kvs;
  if (!within("responses[0]",
              readObject(responses[0], "response_range", range, error) &&
                  within("response_range", readKeyValues(range, kvs, error), error),
              error)) {
    return false;
  }
  if (kvs.size() != 1) {
    error = "responses[0].response_range: the key is not there";
    return false;
  }
  out.kv = std::move(kvs[0]);
  return true;
}

bool decodeWatchMessage(std::string_view line, WatchMessage& out, std::string& error) {
  out = WatchMessage{};
  auto j = parseObject(line, error);
  if (!j) return false;
  if (j->contains("error")) {
    GatewayError e;
    if (!decodeGatewayError(line, e)) {
      error = "error: not an error message";
      return false;
    }
    out.error = std::move(e);
    return true;
  }
  json result;
  json events;
  if (!unwrapResult(*j, result, error) ||
      !within("result",
              readHeader(result, out.header, error) &&
                  readInt(result, "watch_id", out.watchId, error) &&
                  readBool(result, "created", out.created, error) &&
                  readBool(result, "canceled", out.canceled, error) &&
                  readInt(result, "compact_revision", out.compactRevision, error) &&
                  readArray(result, "events", events, error),
              error)) {
    return false;
  }
  if (auto it = result.find("cancel_reason"); it != result.end() && it->is_string()) {
    out.cancelReason = it->get<std::string>();
  }
  for (std::size_t i = 0; i < events.size(); i++) {
    const std::string where = "result.events[" + std::to_string(i) + "]";
    const json& e = events[i];
    if (!e.is_object()) {
      error = where + ": not an object";
      return false;
    }
    WatchEvent event;
    const auto type = e.find("type");
    if (type != e.end() && !type->is_null()) {
      if (*type == "DELETE") {
        event.type = WatchEvent::Type::kDelete;
      } else if (*type != "PUT") {
        error = where + ".type: unknown";
        return false;
      }
    }
    json kv;
    if (!within(where,
                readObject(e, "kv", kv, error) &&
                    within("kv", readKeyValue(kv, event.kv, error), error),
                error)) {
      return false;
    }
    out.events.push_back(std::move(event));
  }
  return true;
}

}  // namespace leasehold::etcd
