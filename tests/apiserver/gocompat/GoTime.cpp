// Go's time.Parse / time.Format for RFC3339 and RFC3339Micro (see GoTime.h).
#include "gocompat/GoTime.h"

#include <chrono>
#include <cstdio>
#include <string_view>

#include "gocompat/GoQuote.h"

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

std::string rfc3339_now() {
  return format_rfc3339(unix_now_s());
}

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace apiserver
