#pragma once
// One line per event on stderr: `text` for people, `json` (one object per line: ts, level, msg,
// and the fields) for log pipelines. Callers pass only non-secret values: the logger has no way
// to know what a token looks like, so nothing secret may ever be handed to it.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace leasehold::log {

enum class Level { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };
enum class Format { kText, kJson };

using Fields = std::vector<std::pair<std::string, std::string>>;

class Logger {
 public:
  Logger(Format format = Format::kText, Level minimum = Level::kInfo, int fd = 2)
      : format_(format), minimum_(minimum), fd_(fd) {}

  void setFormat(Format f) { format_ = f; }
  void setLevel(Level l) { minimum_ = l; }
  bool enabled(Level l) const { return l >= minimum_; }

  void log(Level level, std::string_view msg, const Fields& fields = {}) const;
  void debug(std::string_view msg, const Fields& f = {}) const { log(Level::kDebug, msg, f); }
  void info(std::string_view msg, const Fields& f = {}) const { log(Level::kInfo, msg, f); }
  void warn(std::string_view msg, const Fields& f = {}) const { log(Level::kWarn, msg, f); }
  void error(std::string_view msg, const Fields& f = {}) const { log(Level::kError, msg, f); }

  // A logger that adds `fields` to every line (shard mode: which shard's Lease it is about).
  Logger with(Fields fields) const {
    Logger l = *this;
    l.always_.insert(l.always_.end(), fields.begin(), fields.end());
    return l;
  }

  // The line that log() would write, without the trailing newline (for tests).
  std::string format(Level level, std::string_view msg, const Fields& fields,
                     std::string_view timestamp) const;

 private:
  Format format_;
  Level minimum_;
  int fd_;
  Fields always_;  // added to every line (with())
};

const char* toString(Level l);

}  // namespace leasehold::log
