#pragma once
// Splits a byte stream that arrives in arbitrary pieces into lines: one piece may hold several
// lines and a line may span pieces (watch streams deliver one JSON object per line over HTTP
// chunks that do not respect line boundaries).
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace leasehold::net {

class LineSplitter {
 public:
  using LineCallback = std::function<void(std::string_view line)>;

  // A line longer than maxLineBytes (excluding the line ending) is an error: without a bound a
  // peer that never sends '\n' would grow the buffer without limit.
  explicit LineSplitter(std::size_t maxLineBytes = 4 * 1024 * 1024) : maxLineBytes_(maxLineBytes) {}

  // Calls onLine for every line completed by these bytes, without its "\n" or "\r\n"; empty lines
  // are reported too. Returns false (and ignores all further input until reset()) once a line
  // exceeds the limit. The string_view passed to onLine is valid only during the call.
  bool feed(std::string_view bytes, const LineCallback& onLine);

  // Bytes of the incomplete last line, if any (e.g. to report a stream that ended mid-line).
  std::string_view partial() const { return partial_; }
  bool overflowed() const { return overflowed_; }
  void reset();

 private:
  std::size_t maxLineBytes_;
  std::string partial_;
  bool overflowed_ = false;
};

}  // namespace leasehold::net
