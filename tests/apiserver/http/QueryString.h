// Percent-decoding and query strings as Go's net/url reads them.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace apiserver {

std::string url_decode(std::string_view s, bool plus_is_space);
std::map<std::string, std::string> parse_query(std::string_view q);  // first value of a key wins

}  // namespace apiserver
