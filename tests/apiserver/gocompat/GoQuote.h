// strconv.Quote of Go, as far as Kubernetes error texts need it: the quoting in field errors,
// "unknown field" warnings and time parse errors.
#pragma once

#include <string>
#include <string_view>

namespace apiserver {

// `s` in double quotes; `"` and `\` escaped, control bytes as \xNN.
std::string go_quote(std::string_view s);

}  // namespace apiserver
