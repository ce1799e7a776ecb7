#pragma once
// Configuration is printed back as YAML (--print-config), and YAML text is Unicode: a value with
// stray bytes (yaml-cpp passes them through, a shell passes anything) could not be printed back
// as it was given, and the identity would not survive the trip into the Lease's JSON. So every
// value, from the file, the environment or a flag, must be well-formed UTF-8.
#include <string_view>

namespace leasehold::config {

// Well-formed UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF.
bool isValidUtf8(std::string_view text);

}  // namespace leasehold::config
