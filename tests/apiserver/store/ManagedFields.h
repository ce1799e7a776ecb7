// metadata.managedFields as the real server keeps them for Update operations: which manager
// (fieldManager or the User-Agent's program name) owns which leaf field, in FieldsV1 form.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "json/Json.h"

namespace apiserver {

using Path = std::vector<std::string>;
using Leaves = std::map<Path, J>;

struct Managed {
  std::string manager, api_version, time;
  std::set<Path> fields;
};

void meta_leaves(const J& meta, Leaves& out);  // labels and annotations
bool empty_value(const J& v);                  // Go's omitempty
Leaves lease_leaves(const J& o);
Leaves event_leaves(const J& versioned);
// `manager` takes the leaves that changed from old_l to new_l; others keep what did not change.
void apply_ownership(std::vector<Managed>& managed, const Leaves& old_l, const Leaves& new_l,
                     const std::string& manager, const std::string& api_version);
J render_managed(const std::vector<Managed>& managed);

}  // namespace apiserver
