#include "net/LineSplitter.h"

namespace leasehold::net {
namespace {

std::string_view withoutCarriageReturn(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

}  // namespace

bool LineSplitter::feed(std::string_view bytes, const LineCallback& onLine) {
  if (overflowed_) return false;
  while (!bytes.empty()) {
    const auto newline = bytes.find('\n');
    if (newline == std::string_view::npos) {
      // "+1" allows a trailing '\r' of a line that is exactly at the limit.
      if (partial_.size() + bytes.size() > maxLineBytes_ + 1) {
        overflowed_ = true;
        partial_.clear();
        return false;
      }
      partial_.append(bytes);
      return true;
    }
    const auto piece = bytes.substr(0, newline);
    bytes.remove_prefix(newline + 1);
    if (partial_.empty()) {
      // Common case: the whole line is inside this piece, no copy needed.
      const auto line = withoutCarriageReturn(piece);
      if (line.size() > maxLineBytes_) {
        overflowed_ = true;
        return false;
      }
      onLine(line);
    } else {
      if (partial_.size() + piece.size() > maxLineBytes_ + 1) {
        overflowed_ = true;
        partial_.clear();
        return false;
      }
      partial_.append(piece);
      const auto line = withoutCarriageReturn(partial_);
      if (line.size() > maxLineBytes_) {
        overflowed_ = true;
        partial_.clear();
        return false;
      }
      // Move the buffer out first so that onLine may call feed() or reset() re-entrantly.
      std::string complete = std::move(partial_);
      partial_.clear();
      onLine(withoutCarriageReturn(complete));
      if (overflowed_) return false;
    }
  }
  return true;
}

void LineSplitter::reset() {
  partial_.clear();
  overflowed_ = false;
}

}  // namespace leasehold::net
