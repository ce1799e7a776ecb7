// Percent-decoding and query strings (see QueryString.h).
#include "http/QueryString.h"

#include <cctype>

namespace apiserver {

std::string url_decode(std::string_view s, bool plus_is_space) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::map<std::string, std::string> parse_query(std::string_view q) {
  std::map<std::string, std::string> out;
  size_t start = 0;
  while (start <= q.size()) {
    size_t amp = q.find('&', start);
    std::string_view part = q.substr(start, amp == std::string_view::npos ? q.npos : amp - start);
    if (!part.empty()) {
      size_t eq = part.find('=');
      std::string k = url_decode(part.substr(0, eq), true);
      std::string v = eq == std::string_view::npos ? "" : url_decode(part.substr(eq + 1), true);
      out.emplace(k, v);
    }
    if (amp == std::string_view::npos) break;
    start = amp + 1;
  }
  return out;
}

}  // namespace apiserver
