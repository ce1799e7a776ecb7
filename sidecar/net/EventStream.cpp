#include "net/EventStream.h"

#include <algorithm>

namespace leasehold::net {
namespace {

// Calls onLine for each line of text ("\n", "\r\n" and lone "\r" all end lines, as in the SSE
// grammar, so a payload cannot smuggle in its own fields). Empty text is one empty line.
template <typename OnLine>
void forEachLine(std::string_view text, OnLine onLine) {
  while (true) {
    const auto end = text.find_first_of("\r\n");
    if (end == std::string_view::npos) {
      onLine(text);
      return;
    }
    onLine(text.substr(0, end));
    std::size_t skip = 1;
    if (text[end] == '\r' && end + 1 < text.size() && text[end + 1] == '\n') skip = 2;
    text.remove_prefix(end + skip);
  }
}

}  // namespace

std::size_t EventStream::eventSize(std::string_view data) {
  std::size_t size = 1;  // the blank line that ends the event
  forEachLine(data, [&](std::string_view line) { size += 7 + line.size(); });  // "data: " + "\n"
  return size;
}

std::size_t EventStream::commentSize(std::string_view text) {
  std::size_t size = 0;
  forEachLine(text, [&](std::string_view line) { size += 3 + line.size(); });  // ": " + "\n"
  return size;
}

void EventStream::appendEvent(std::string& out, std::string_view data) {
  forEachLine(data, [&](std::string_view line) { out.append("data: ").append(line).append("\n"); });
  out.append("\n");
}

void EventStream::appendComment(std::string& out, std::string_view text) {
  forEachLine(text, [&](std::string_view line) { out.append(": ").append(line).append("\n"); });
}

}  // namespace leasehold::net
