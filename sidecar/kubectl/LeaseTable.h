#pragma once
// Prints LeaseRows: kubectl's table layout (upper-case headers, columns padded to the widest
// cell plus three spaces, "<none>" for an empty cell), or JSON for scripts (one object for a
// named Lease, {"items": [...]} for a list; times as MicroTime strings, ages in seconds).
#include <string>
#include <vector>

#include "kubectl/LeaseRow.h"
#include "kubectl/PluginArgs.h"

namespace leasehold::kubectl {

class LeaseTable {
 public:
  // `withNamespace`: a NAMESPACE column first (-A).
  static std::string table(const std::vector<LeaseRow>& rows, bool withNamespace, bool wide);
  static std::string json(const LeaseRow& row);
  static std::string json(const std::vector<LeaseRow>& rows);
  // The EXPIRES cell: "8s", "expired", "<none>".
  static std::string expiresCell(const LeaseRow& row);
};

}  // namespace leasehold::kubectl
