#include "config/Config.h"

namespace leasehold::config {

std::string_view toString(LogFormat format) {
  return format == LogFormat::Json ? "json" : "text";
}

std::string_view toString(LogLevel level) {
  switch (level) {
    case LogLevel::Debug:
      return "debug";
    case LogLevel::Info:
      return "info";
    case LogLevel::Warn:
      return "warn";
    case LogLevel::Error:
      return "error";
  }
  return "info";
}

std::string_view toString(FollowerMode mode) {
  return mode == FollowerMode::Poll ? "poll" : "watch";
}

}  // namespace leasehold::config
