// Validation of object metadata as k8s.io/apimachinery does it: names (DNS-1123 subdomains),
// label keys and values (qualified names), annotations (keys and total size), with the real
// server's message texts (the golden captures compare them).
#pragma once

#include <string>
#include <vector>

#include "json/Json.h"
#include "validation/FieldError.h"

namespace apiserver {

std::vector<std::string> dns1123_subdomain_errors(const std::string& v);
std::vector<std::string> qualified_name_errors(const std::string& v);
std::vector<std::string> label_value_errors(const std::string& v);
FieldErrors validate_object_name(const std::string& name, const std::string& generate_name,
                                 const std::string& path);
FieldErrors validate_labels(const J& labels, const std::string& path);
FieldErrors validate_annotations(const J& ann, const std::string& path);

}  // namespace apiserver
