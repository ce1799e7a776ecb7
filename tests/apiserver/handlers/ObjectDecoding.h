// Go's typed decoding of object bodies (encoding/json into the Kubernetes structs): which JSON
// types a field accepts, int32 ranges, metav1.Time and MicroTime parsing, and the
// "json: cannot unmarshal ..." texts of the real server's 400s.
#pragma once

#include <string>

#include "json/Json.h"

namespace apiserver {

const char* go_json_type(const J& v);  // string number bool array object null
std::string unmarshal_err(const J& v, const std::string& field, const std::string& type);

// Each returns "" or the error text; `out` gets the decoded value (unchanged for null).
std::string decode_meta(const J& in, const std::string& kind, J& out);  // ObjectMeta
std::string decode_int32(const J& v, const std::string& field, J& out);
std::string decode_micro(const J& v, J& out);  // metav1.MicroTime
std::string decode_time(const J& v, J& out);   // metav1.Time

}  // namespace apiserver
