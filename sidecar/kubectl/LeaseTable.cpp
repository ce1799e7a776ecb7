#include "kubectl/LeaseTable.h"

#include <nlohmann/json.hpp>

#include "kubectl/HumanDuration.h"

namespace leasehold::kubectl {
namespace {

std::string orNone(const std::string& s) {
  return s.empty() ? "<none>" : s;
}

std::string ageCell(const std::optional<std::chrono::microseconds>& d) {
  return d ? HumanDuration::format(*d) : "<none>";
}

double seconds(std::chrono::microseconds d) {
  return static_cast<double>(d.count()) / 1e6;
}

nlohmann::json object(const LeaseRow& r) {
  nlohmann::json o;
  const auto& l = r.lease;
  o["namespace"] = r.ns;
  o["name"] = r.name;
  o["holder"] = l.holderIdentity;
  o["pod"] = l.holderPod;
  o["address"] = l.holderAddress;
  o["token"] = l.leaseTransitions;
  o["preferred"] = l.preferredHolder;
  o["leaseDurationSeconds"] =
      l.leaseDurationSeconds ? nlohmann::json(*l.leaseDurationSeconds) : nlohmann::json();
  o["acquireTime"] =
      l.acquireTime ? nlohmann::json(time::formatMicroTime(*l.acquireTime)) : nlohmann::json();
  o["renewTime"] =
      l.renewTime ? nlohmann::json(time::formatMicroTime(*l.renewTime)) : nlohmann::json();
  o["renewedSecondsAgo"] = r.renewedAgo ? nlohmann::json(seconds(*r.renewedAgo)) : nlohmann::json();
  // Wall clocks of two machines: informational (see LeaseRow).
  o["expiresInSeconds"] = r.expiresIn ? nlohmann::json(seconds(*r.expiresIn)) : nlohmann::json();
  o["expired"] = r.expired();
  return o;
}

}  // namespace

std::string LeaseTable::expiresCell(const LeaseRow& row) {
  if (!row.expiresIn) return "<none>";
  if (row.expired()) return "expired";
  return HumanDuration::format(*row.expiresIn);
}

std::string LeaseTable::table(const std::vector<LeaseRow>& rows, bool withNamespace, bool wide) {
  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> header{"NAME",    "HOLDER",  "POD",      "TOKEN",
                                  "RENEWED", "EXPIRES", "PREFERRED"};
  if (wide) header.insert(header.end(), {"ACQUIRED", "DURATION", "ADDRESS"});
  if (withNamespace) header.insert(header.begin(), "NAMESPACE");
  cells.push_back(header);
  for (const LeaseRow& r : rows) {
    const auto& l = r.lease;
    std::vector<std::string> line{r.name,
                                  orNone(l.holderIdentity),
                                  orNone(l.holderPod),
                                  std::to_string(l.leaseTransitions),
                                  ageCell(r.renewedAgo),
                                  expiresCell(r),
                                  orNone(l.preferredHolder)};
    if (wide) {
      line.push_back(ageCell(r.acquiredAgo));
      line.push_back(l.leaseDurationSeconds ? std::to_string(*l.leaseDurationSeconds) + "s"
                                            : "<none>");
      line.push_back(orNone(l.holderAddress));
    }
    if (withNamespace) line.insert(line.begin(), r.ns);
    cells.push_back(std::move(line));
  }
  std::vector<std::size_t> width(header.size(), 0);
  for (const auto& line : cells) {
    for (std::size_t i = 0; i < line.size(); ++i)
      width[i] = std::max(width[i], line[i].size());
  }
  std::string out;
  for (const auto& line : cells) {
    for (std::size_t i = 0; i < line.size(); ++i) {
      out += line[i];
      if (i + 1 < line.size()) out.append(width[i] - line[i].size() + 3, ' ');
    }
    out += '\n';
  }
  return out;
}

std::string LeaseTable::json(const LeaseRow& row) {
  return object(row).dump(2) + "\n";
}

std::string LeaseTable::json(const std::vector<LeaseRow>& rows) {
  nlohmann::json items = nlohmann::json::array();
  for (const LeaseRow& r : rows)
    items.push_back(object(r));
  return nlohmann::json{{"items", items}}.dump(2) + "\n";
}

}  // namespace leasehold::kubectl
