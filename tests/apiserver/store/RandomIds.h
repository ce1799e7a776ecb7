// The random parts of stored objects: generateName suffixes (Kubernetes' name-generation
// alphabet) and metadata.uid (a version-4 UUID).
#pragma once

#include <cstddef>
#include <string>

namespace apiserver {

std::string random_suffix(size_t n);  // Kubernetes' name-generation alphabet
std::string new_uuid();

}  // namespace apiserver
