#pragma once
// An ordered list of HTTP header fields with case-insensitive lookup. Kept as a flat vector:
// messages carry a handful of fields, so a linear scan beats any map.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace leasehold::net {

class HttpHeaders {
 public:
  using Field = std::pair<std::string, std::string>;

  void add(std::string name, std::string value) {
    fields_.emplace_back(std::move(name), std::move(value));
  }
  // The value of the first field with this name (ASCII case-insensitive), if any.
  std::optional<std::string_view> get(std::string_view name) const;
  bool contains(std::string_view name) const { return get(name).has_value(); }

  const std::vector<Field>& fields() const { return fields_; }
  std::size_t size() const { return fields_.size(); }
  bool empty() const { return fields_.empty(); }
  void clear() { fields_.clear(); }

  static bool equalsIgnoreCase(std::string_view a, std::string_view b);

 private:
  std::vector<Field> fields_;
};

}  // namespace leasehold::net
