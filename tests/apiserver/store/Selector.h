// Label and field selectors: parsing with the real server's error texts, matching objects
// (namespace + field selector + label selector), as LIST and WATCH filter.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "json/Json.h"

namespace apiserver {

// A label or field selector: equality terms (k=v, k==v, k!=v, k, !k) and label set terms
// (k in (a,b), k notin (a,b); their value starts with \x01).
struct Selector {
  struct Term {
    std::string key;
    std::string value;
    enum Op { kEq, kNe, kExists, kNotExists } op = kEq;
  };
  std::vector<Term> terms;
  bool matches(const std::function<std::optional<std::string>(const std::string&)>& get) const;
};

// Parses `s` as a label (label=true) or field selector. On failure fills `err`.
bool parse_selector(const std::string& s, bool label, Selector& out, std::string& err);

// The string at a dotted path of `o` (other JSON values as their text), or nullopt.
std::optional<std::string> json_path_str(const J& o, const std::string& path);

// Whether `o` is in namespace `ns` ("" = any) and matches both selectors.
bool object_matches(const std::string& ns, const Selector& fields, const Selector& labels,
                    const J& o);

}  // namespace apiserver
