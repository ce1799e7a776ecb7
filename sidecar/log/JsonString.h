#pragma once
// Appends s as a JSON string literal (quotes, escapes, control characters as \u00XX). Shared by
// the JSON log lines and the hand-written /leader body, which must stay cheap to produce.
#include <string>
#include <string_view>

namespace leasehold::log {

void appendJsonString(std::string& out, std::string_view s);

}  // namespace leasehold::log
