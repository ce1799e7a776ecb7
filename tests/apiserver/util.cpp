#include "util.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <random>

namespace apiserver {

namespace {

int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

void civil_from_days(int64_t z, int64_t& y, unsigned& m, unsigned& d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  y = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  y += m <= 2;
}

bool is_leap(int64_t y) {
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

int days_in(int m, int64_t y) {
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (m == 2 && is_leap(y)) return 29;
  return kDays[m - 1];
}

bool digit(std::string_view s, size_t i) {
  return i < s.size() && s[i] >= '0' && s[i] <= '9';
}

// Go's getnum: one or two digits (two required when fixed).
bool getnum(std::string_view& s, bool fixed, int& out) {
  if (!digit(s, 0)) return false;
  if (!digit(s, 1)) {
    if (fixed) return false;
    out = s[0] - '0';
    s.remove_prefix(1);
    return true;
  }
  out = (s[0] - '0') * 10 + (s[1] - '0');
  s.remove_prefix(2);
  return true;
}

}  // namespace

std::string go_quote(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

GoTime go_parse_time(const std::string& value, bool micro) {
  GoTime r;
  const std::string layout =
      micro ? "2006-01-02T15:04:05.000000Z07:00" : "2006-01-02T15:04:05Z07:00";
  auto bad = [&](std::string_view rest, std::string_view elem) {
    r.err = "parsing time " + go_quote(value) + " as " + go_quote(layout) + ": cannot parse " +
            go_quote(rest) + " as " + go_quote(elem);
    return r;
  };
  auto range = [&](const std::string& what) {
    r.err = "parsing time " + go_quote(value) + ": " + what + " out of range";
    return r;
  };
  std::string_view s = value;
  auto lit = [&](std::string_view l) {
    if (s.substr(0, l.size()) != l) return false;
    s.remove_prefix(l.size());
    return true;
  };
  // year
  if (s.size() < 4) return bad(s, "2006");
  int64_t year = 0;
  {
    std::string_view p = s.substr(0, 4);
    bool neg = false;
    if (p[0] == '-' || p[0] == '+') {
      neg = p[0] == '-';
      p.remove_prefix(1);
    }
    if (p.empty()) return bad(s, "2006");
    for (char c : p) {
      if (c < '0' || c > '9') return bad(s, "2006");
      year = year * 10 + (c - '0');
    }
    if (neg) year = -year;
    s.remove_prefix(4);
  }
  int month = 0, day = 0, hour = 0, minute = 0, sec = 0;
  int64_t nanos = 0;
  if (!lit("-")) return bad(s, "-");
  {
    std::string_view hold = s;
    if (!getnum(s, true, month)) return bad(hold, "01");
    if (month < 1 || month > 12) return range("month");
  }
  if (!lit("-")) return bad(s, "-");
  {
    std::string_view hold = s;
    if (!getnum(s, true, day)) return bad(hold, "02");
  }
  if (!lit("T")) return bad(s, "T");
  {
    std::string_view hold = s;
    if (!getnum(s, false, hour)) return bad(hold, "15");
    if (hour < 0 || hour >= 24) return range("hour");
  }
  if (!lit(":")) return bad(s, ":");
  {
    std::string_view hold = s;
    if (!getnum(s, true, minute)) return bad(hold, "04");
    if (minute >= 60) return range("minute");
  }
  if (!lit(":")) return bad(s, ":");
  {
    std::string_view hold = s;
    if (!getnum(s, true, sec)) return bad(hold, "05");
    if (sec >= 60) return range("second");
  }
  if (micro) {
    std::string_view hold = s;
    if (s.size() < 7 || (s[0] != '.' && s[0] != ',')) return bad(hold, ".000000");
    for (size_t i = 1; i < 7; ++i) {
      if (!digit(s, i)) return bad(hold, ".000000");
      nanos = nanos * 10 + (s[i] - '0');
    }
    nanos *= 1000;
    s.remove_prefix(7);
  } else if (s.size() >= 2 && (s[0] == '.' || s[0] == ',') && digit(s, 1)) {
    size_t n = 1;
    int64_t scale = 100000000;
    while (digit(s, n)) {
      if (n <= 9) nanos += (s[n] - '0') * scale;
      scale /= 10;
      ++n;
    }
    s.remove_prefix(n);
  }
  int64_t offset = 0;
  {
    std::string_view hold = s;
    if (!s.empty() && s[0] == 'Z') {
      s.remove_prefix(1);
    } else {
      if (s.size() < 6 || s[3] != ':') return bad(hold, "Z07:00");
      std::string_view hh = s.substr(1, 2), mm = s.substr(4, 2);
      int h = 0, m = 0;
      if (!getnum(hh, true, h) || !getnum(mm, true, m)) return bad(hold, "Z07:00");
      if (h > 24) return range("time zone offset hour");
      if (m > 60) return range("time zone offset minute");
      offset = (h * 60 + m) * 60;
      if (s[0] == '-')
        offset = -offset;
      else if (s[0] != '+')
        return bad(hold, "Z07:00");
      s.remove_prefix(6);
    }
  }
  if (!s.empty()) {
    r.err = "parsing time " + go_quote(value) + ": extra text: " + go_quote(s);
    return r;
  }
  if (day < 1 || day > days_in(month, year)) return range("day");
  r.ok = true;
  r.unix_s =
      days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day)) * 86400 +
      hour * 3600 + minute * 60 + sec - offset;
  r.nanos = nanos;
  return r;
}

static std::string format_base(int64_t unix_s) {
  int64_t days = unix_s >= 0 ? unix_s / 86400 : -((-unix_s + 86399) / 86400);
  int64_t rem = unix_s - days * 86400;
  int64_t y;
  unsigned m, d;
  civil_from_days(days, y, m, d);
  char buf[128];
  std::snprintf(buf, sizeof buf, "%04lld-%02u-%02uT%02lld:%02lld:%02lld", static_cast<long long>(y),
                m, d, static_cast<long long>(rem / 3600), static_cast<long long>(rem / 60 % 60),
                static_cast<long long>(rem % 60));
  return buf;
}

std::string format_micro(int64_t unix_s, int64_t nanos) {
  char buf[32];
  std::snprintf(buf, sizeof buf, ".%06lld", static_cast<long long>((nanos / 1000) % 1000000));
  return format_base(unix_s) + buf + "Z";
}

std::string format_rfc3339(int64_t unix_s) {
  return format_base(unix_s) + "Z";
}

int64_t unix_now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string human_duration(int64_t seconds) {
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 120) return std::to_string(seconds) + "s";
  int64_t minutes = seconds / 60;
  if (minutes < 10) {
    int64_t s = seconds % 60;
    return s == 0 ? std::to_string(minutes) + "m"
                  : std::to_string(minutes) + "m" + std::to_string(s) + "s";
  }
  if (minutes < 180) return std::to_string(minutes) + "m";
  int64_t hours = seconds / 3600;
  if (hours < 8) {
    int64_t m = minutes % 60;
    return m == 0 ? std::to_string(hours) + "h"
                  : std::to_string(hours) + "h" + std::to_string(m) + "m";
  }
  if (hours < 48) return std::to_string(hours) + "h";
  if (hours < 24 * 8) {
    int64_t h = hours % 24;
    return h == 0 ? std::to_string(hours / 24) + "d"
                  : std::to_string(hours / 24) + "d" + std::to_string(h) + "h";
  }
  if (hours < 24 * 365 * 2) return std::to_string(hours / 24) + "d";
  if (hours < 24 * 365 * 8) {
    int64_t dy = (hours / 24) % 365;
    return dy == 0 ? std::to_string(hours / 24 / 365) + "y"
                   : std::to_string(hours / 24 / 365) + "y" + std::to_string(dy) + "d";
  }
  return std::to_string(hours / 24 / 365) + "y";
}

std::string FieldError::body() const {
  switch (type) {
    case kRequired:
      return detail.empty() ? "Required value" : "Required value: " + detail;
    case kForbidden:
      return detail.empty() ? "Forbidden" : "Forbidden: " + detail;
    case kNotSupported:
      return "Unsupported value: " + value + (detail.empty() ? "" : ": " + detail);
    case kTooLong:
      return "Too long: " + detail;
    case kInvalid:
    default:
      return "Invalid value: " + value + (detail.empty() ? "" : ": " + detail);
  }
}

const char* FieldError::reason() const {
  switch (type) {
    case kRequired:
      return "FieldValueRequired";
    case kForbidden:
      return "FieldValueForbidden";
    case kNotSupported:
      return "FieldValueNotSupported";
    case kTooLong:
      return "FieldValueTooLong";
    case kInvalid:
    default:
      return "FieldValueInvalid";
  }
}

namespace {
bool alnum_lower(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}
bool alnum(char c) {
  return alnum_lower(c) || (c >= 'A' && c <= 'Z');
}

bool is_dns1123_label_body(std::string_view s) {
  if (s.empty() || !alnum_lower(s.front()) || !alnum_lower(s.back())) return false;
  for (char c : s)
    if (!alnum_lower(c) && c != '-') return false;
  return true;
}

bool is_qualified_name_part(std::string_view s) {
  if (s.empty() || !alnum(s.front()) || !alnum(s.back())) return false;
  for (char c : s)
    if (!alnum(c) && c != '-' && c != '_' && c != '.') return false;
  return true;
}

const char* kQualifiedNameMsg =
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
}  // namespace

std::vector<std::string> dns1123_subdomain_errors(const std::string& v) {
  std::vector<std::string> errs;
  if (v.size() > 253) errs.push_back("must be no more than 253 characters");
  bool ok = !v.empty();
  size_t start = 0;
  while (ok) {
    size_t dot = v.find('.', start);
    std::string_view part = std::string_view(v).substr(
        start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!is_dns1123_label_body(part)) ok = false;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (!ok)
    errs.push_back(
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
        "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
        "used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')");
  return errs;
}

std::vector<std::string> qualified_name_errors(const std::string& v) {
  std::vector<std::string> errs;
  std::string name = v;
  auto slash = v.find('/');
  if (slash != std::string::npos) {
    std::string prefix = v.substr(0, slash);
    name = v.substr(slash + 1);
    if (v.find('/', slash + 1) != std::string::npos) {
      errs.push_back(
          "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must "
          "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
          "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') "
          "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
      return errs;
    }
    if (prefix.empty()) {
      errs.push_back("prefix part must be non-empty");
    } else {
      for (auto& e : dns1123_subdomain_errors(prefix))
        errs.push_back("prefix part " + e);
    }
  }
  if (name.empty()) {
    errs.push_back("name part must be non-empty");
  } else if (name.size() > 63) {
    errs.push_back("name part must be no more than 63 characters");
  }
  if (!is_qualified_name_part(name)) errs.push_back(kQualifiedNameMsg);
  return errs;
}

std::vector<std::string> label_value_errors(const std::string& v) {
  std::vector<std::string> errs;
  if (v.empty()) return errs;
  if (v.size() > 63) errs.push_back("must be no more than 63 characters");
  if (!is_qualified_name_part(v))
    errs.push_back(
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
        "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
        "'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')");
  return errs;
}

FieldErrors validate_object_name(const std::string& name, const std::string& generate_name,
                                 const std::string& path) {
  FieldErrors errs;
  if (name.empty()) {
    if (generate_name.empty())
      errs.push_back({FieldError::kRequired, path, "", "name or generateName is required"});
    return errs;
  }
  for (auto& m : dns1123_subdomain_errors(name))
    errs.push_back({FieldError::kInvalid, path, go_quote(name), m});
  return errs;
}

FieldErrors validate_labels(const nlohmann::ordered_json& labels, const std::string& path) {
  FieldErrors errs;
  if (!labels.is_object()) return errs;
  for (auto& [k, v] : labels.items()) {
    for (auto& m : qualified_name_errors(k))
      errs.push_back({FieldError::kInvalid, path, go_quote(k), m});
    std::string val = v.is_string() ? v.get<std::string>() : "";
    for (auto& m : label_value_errors(val))
      errs.push_back({FieldError::kInvalid, path, go_quote(val), m});
  }
  return errs;
}

FieldErrors validate_annotations(const nlohmann::ordered_json& ann, const std::string& path) {
  FieldErrors errs;
  if (!ann.is_object()) return errs;
  size_t total = 0;
  for (auto& [k, v] : ann.items()) {
    std::string lower;
    for (char c : k)
      lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (auto& m : qualified_name_errors(lower))
      errs.push_back({FieldError::kInvalid, path, go_quote(k), m});
    total += k.size() + (v.is_string() ? v.get<std::string>().size() : 0);
  }
  if (total > 256 * 1024)
    errs.push_back({FieldError::kTooLong, path, "", "must have at most 262144 bytes"});
  return errs;
}

size_t json_depth(std::string_view s) {
  size_t depth = 0, max_depth = 0;
  bool in_str = false, esc = false;
  for (char c : s) {
    if (in_str) {
      if (esc)
        esc = false;
      else if (c == '\\')
        esc = true;
      else if (c == '"')
        in_str = false;
      continue;
    }
    if (c == '"') {
      in_str = true;
    } else if (c == '{' || c == '[') {
      max_depth = std::max(max_depth, ++depth);
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
  }
  return max_depth;
}

static std::mt19937_64& rng() {
  static std::mt19937_64 r{std::random_device{}()};
  return r;
}

std::string random_suffix(size_t n) {
  static const char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
  std::string s;
  for (size_t i = 0; i < n; ++i)
    s += kAlphabet[rng()() % (sizeof kAlphabet - 1)];
  return s;
}

std::string new_uuid() {
  uint64_t a = rng()(), b = rng()();
  a = (a & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;
  b = (b & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;
  char buf[40];
  std::snprintf(buf, sizeof buf, "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(a >> 32),
                static_cast<unsigned>((a >> 16) & 0xffff), static_cast<unsigned>(a & 0xffff),
                static_cast<unsigned>(b >> 48),
                static_cast<unsigned long long>(b & 0xffffffffffffULL));
  return buf;
}

}  // namespace apiserver
