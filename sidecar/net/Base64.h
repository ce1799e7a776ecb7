#pragma once
// Base64, standard alphabet, as kubeconfig *-data fields and etcd's JSON gateway (keys and
// values) use it. Decoding tolerates line breaks and missing padding, which hand-edited
// kubeconfigs have; anything else is rejected.
#include <optional>
#include <string>
#include <string_view>

namespace leasehold::net {

class Base64 {
 public:
  static std::optional<std::string> decode(std::string_view text);
  static std::string encode(std::string_view bytes);
};

}  // namespace leasehold::net
