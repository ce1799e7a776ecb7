// Content negotiation: the media type of a request body, and what an Accept header asks for
// (JSON, or a meta.k8s.io Table as kubectl get asks).
#pragma once

#include <string>

namespace apiserver {

std::string media_type(const std::string& ct);  // lower-case, parameters and blanks dropped

struct AcceptInfo {
  bool json = false;
  std::string table_version;  // "v1" / "v1beta1" / ""
};

AcceptInfo parse_accept(const std::string& accept);

}  // namespace apiserver
