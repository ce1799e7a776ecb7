#include "cluster/ExecCredential.h"

#include <nlohmann/json.hpp>

namespace leasehold::cluster {

namespace {

using nlohmann::json;

// A string member or an error naming its path. Never indexes a missing key (UB on const json).
LoadResult<std::optional<std::string>> optionalString(const json& object, const char* key,
                                                      const std::string& path,
                                                      const std::string& origin) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::optional<std::string>{};
  if (!it->is_string()) {
    return LoadError{origin + ": " + path + "." + key + ": expected a string, got " +
                     std::string(it->type_name())};
  }
  return std::optional<std::string>{it->get<std::string>()};
}

bool parseDigits(std::string_view text, std::size_t pos, std::size_t count, int& out) {
  if (pos + count > text.size()) return false;
  out = 0;
  for (std::size_t i = pos; i < pos + count; ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    out = out * 10 + (text[i] - '0');
  }
  return true;
}

}  // namespace

std::optional<time::WallTime> ExecCredential::parseRfc3339(std::string_view text) {
  using namespace std::chrono;
  // YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM)
  int year, month, day, hour, minute, second;
  if (text.size() < 20) return std::nullopt;
  if (!parseDigits(text, 0, 4, year) || text[4] != '-' || !parseDigits(text, 5, 2, month) ||
      text[7] != '-' || !parseDigits(text, 8, 2, day) || (text[10] != 'T' && text[10] != 't') ||
      !parseDigits(text, 11, 2, hour) || text[13] != ':' || !parseDigits(text, 14, 2, minute) ||
      text[16] != ':' || !parseDigits(text, 17, 2, second)) {
    return std::nullopt;
  }
  std::size_t pos = 19;
  microseconds fraction{0};
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    const std::size_t start = pos;
    long long micros = 0;
    int digits = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (digits < 6) {
        micros = micros * 10 + (text[pos] - '0');
        ++digits;
      }
      ++pos;
    }
    if (pos == start) return std::nullopt;
    for (; digits < 6; ++digits)
      micros *= 10;
    fraction = microseconds(micros);
  }
  if (pos >= text.size()) return std::nullopt;
  minutes offset{0};
  if (text[pos] == 'Z' || text[pos] == 'z') {
    ++pos;
  } else if (text[pos] == '+' || text[pos] == '-') {
    const int sign = text[pos] == '+' ? 1 : -1;
    int oh, om;
    if (!parseDigits(text, pos + 1, 2, oh) || pos + 3 >= text.size() || text[pos + 3] != ':' ||
        !parseDigits(text, pos + 4, 2, om) || oh > 23 || om > 59) {
      return std::nullopt;
    }
    offset = minutes(sign * (oh * 60 + om));
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != text.size()) return std::nullopt;
  const year_month_day date{std::chrono::year(year),
                            std::chrono::month(static_cast<unsigned>(month)),
                            std::chrono::day(static_cast<unsigned>(day))};
  // Second 60 is a leap second; Go's time.Parse rejects it too.
  if (!date.ok() || hour > 23 || minute > 59 || second > 59) return std::nullopt;
  const auto local = sys_days(date) + hours(hour) + minutes(minute) + seconds(second) + fraction;
  return time_point_cast<microseconds>(local - offset);
}

LoadResult<ExecCredential> ExecCredential::parse(std::string_view text,
                                                 std::string_view expectedApiVersion,
                                                 const std::string& origin) {
  // The plugin's output may contain the token, so parser messages (which quote input) are not
  // passed on; the byte offset is enough to find the problem.
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    return LoadError{origin + ": output is not valid JSON (" + std::to_string(text.size()) +
                     " bytes)"};
  }
  if (!doc.is_object()) {
    return LoadError{origin + ": output is not a JSON object but " + std::string(doc.type_name())};
  }
  auto kind = optionalString(doc, "kind", "", origin);
  if (!kind) return kind.error();
  if (kind->value_or("") != "ExecCredential") {
    return LoadError{origin + ": kind: expected \"ExecCredential\", got \"" + kind->value_or("") +
                     "\""};
  }
  auto apiVersion = optionalString(doc, "apiVersion", "", origin);
  if (!apiVersion) return apiVersion.error();
  if (apiVersion->value_or("") != expectedApiVersion) {
    return LoadError{origin + ": apiVersion: expected \"" + std::string(expectedApiVersion) +
                     "\" (as configured in the kubeconfig), got \"" + apiVersion->value_or("") +
                     "\""};
  }
  const auto status = doc.find("status");
  if (status == doc.end() || status->is_null()) {
    return LoadError{origin + ": status: missing"};
  }
  if (!status->is_object()) {
    return LoadError{origin + ": status: expected an object, got " +
                     std::string(status->type_name())};
  }

  ExecCredential credential;
  auto token = optionalString(*status, "token", "status", origin);
  if (!token) return token.error();
  if (token->has_value() && !(*token)->empty()) credential.token = std::move(token).value();

  auto cert = optionalString(*status, "clientCertificateData", "status", origin);
  if (!cert) return cert.error();
  auto key = optionalString(*status, "clientKeyData", "status", origin);
  if (!key) return key.error();
  credential.clientCertificatePem = cert->value_or("");
  credential.clientKeyPem = key->value_or("");
  if (credential.clientCertificatePem.empty() != credential.clientKeyPem.empty()) {
    return LoadError{origin + ": status: clientCertificateData and clientKeyData must be given " +
                     "together"};
  }
  if (!credential.token && credential.clientCertificatePem.empty()) {
    return LoadError{origin +
                     ": status: neither token nor clientCertificateData/clientKeyData is set"};
  }

  auto expiration = optionalString(*status, "expirationTimestamp", "status", origin);
  if (!expiration) return expiration.error();
  if (expiration->has_value()) {
    credential.expiration = parseRfc3339(**expiration);
    if (!credential.expiration) {
      return LoadError{origin + ": status.expirationTimestamp: \"" + **expiration +
                       "\" is not an RFC 3339 time"};
    }
  }
  return credential;
}

}  // namespace leasehold::cluster
