#pragma once
// Base64 as kubeconfig *-data fields use it (standard alphabet). Decoding tolerates line breaks
// and missing padding, which hand-edited kubeconfigs have; anything else is rejected.
#include <optional>
#include <string>
#include <string_view>

namespace leasehold::cluster {

class KubeconfigBase64 {
 public:
  static std::optional<std::string> decode(std::string_view text);
  static std::string encode(std::string_view bytes);
};

}  // namespace leasehold::cluster
