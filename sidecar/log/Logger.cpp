#include "log/Logger.h"

#include "log/JsonString.h"

#include "time/Time.h"

#include <unistd.h>

#include <chrono>

namespace leasehold::log {
namespace {

bool needsQuotes(std::string_view s) {
  if (s.empty()) return true;
  for (const char c : s) {
    if (c == ' ' || c == '"' || c == '=' || c == '\n' || c == '\t') return true;
  }
  return false;
}

std::string nowTimestamp() {
  return time::formatMicroTime(
      std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now()));
}

}  // namespace

const char* toString(Level l) {
  switch (l) {
    case Level::kDebug:
      return "debug";
    case Level::kInfo:
      return "info";
    case Level::kWarn:
      return "warn";
    case Level::kError:
      return "error";
  }
  return "info";
}

std::string Logger::format(Level level, std::string_view msg, const Fields& fields,
                           std::string_view ts) const {
  std::string out;
  out.reserve(128 + msg.size());
  if (format_ == Format::kJson) {
    out += "{\"ts\":";
    appendJsonString(out, ts);
    out += ",\"level\":";
    appendJsonString(out, toString(level));
    out += ",\"msg\":";
    appendJsonString(out, msg);
    for (const auto& [k, v] : fields) {
      out += ',';
      appendJsonString(out, k);
      out += ':';
      appendJsonString(out, v);
    }
    out += '}';
    return out;
  }
  out += ts;
  out += ' ';
  out += toString(level);
  out += ' ';
  out += msg;
  for (const auto& [k, v] : fields) {
    out += ' ';
    out += k;
    out += '=';
    if (needsQuotes(v)) {
      appendJsonString(out, v);
    } else {
      out += v;
    }
  }
  return out;
}

void Logger::log(Level level, std::string_view msg, const Fields& fields) const {
  if (!enabled(level)) return;
  std::string line;
  if (always_.empty()) {
    line = format(level, msg, fields, nowTimestamp());
  } else {
    Fields all = always_;
    all.insert(all.end(), fields.begin(), fields.end());
    line = format(level, msg, all, nowTimestamp());
  }
  line += '\n';
  // One write per line keeps lines whole when several processes share a terminal or pipe.
  const char* p = line.data();
  std::size_t left = line.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n <= 0) return;
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

}  // namespace leasehold::log
