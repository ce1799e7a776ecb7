#pragma once
// Lease, LeaseList and watch-event bodies as kube-apiserver sends them, for the tests of the
// API objects on FakeApiClient. One copy, shared by the LeaseClient, LeaseWatch and
// LastSeenLeaseStore tests.
#include <nlohmann/json.hpp>
#include <string>

#include "FakeApiClient.h"

namespace leasehold::testing_support {

inline constexpr const char* kNs = "ns";
inline constexpr const char* kLeaseName = "l";
inline constexpr const char* kCollection = "/apis/coordination.k8s.io/v1/namespaces/ns/leases";
inline constexpr const char* kObject = "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l";
// The list of the one Lease (its field selector), as LeaseWatch and LastSeenLeaseStore ask it.
inline const std::string kLeaseListPath =
    std::string(kCollection) + "?fieldSelector=metadata.name%3Dl";

// A Lease object with fields the sidecar does not own (a label, an annotation, a future spec
// field, managedFields), which every write must carry over.
inline nlohmann::json leaseObject(const std::string& holder, const std::string& rv,
                                  int transitions = 0) {
  return {{"kind", "Lease"},
          {"apiVersion", "coordination.k8s.io/v1"},
          {"metadata",
           {{"name", kLeaseName},
            {"namespace", kNs},
            {"uid", "uid-1"},
            {"resourceVersion", rv},
            {"labels", {{"team", "x"}}},
            {"annotations", {{"other", "keep"}}},
            {"managedFields", {{{"manager", "someone"}, {"operation", "Update"}}}}}},
          {"spec",
           {{"holderIdentity", holder},
            {"leaseDurationSeconds", 15},
            {"acquireTime", "2026-11-30T10:00:00.000000Z"},
            {"renewTime", "2026-11-30T10:00:01.000000Z"},
            {"leaseTransitions", transitions},
            {"futureField", true}}}};
}

inline std::string leaseBody(const std::string& holder, const std::string& rv,
                             int transitions = 0) {
  return leaseObject(holder, rv, transitions).dump();
}

// A LeaseList as the fieldSelector LIST returns it: items carry no kind/apiVersion.
inline std::string leaseListBody(const std::string& listRv, const std::string& holder,
                                 const std::string& itemRv) {
  nlohmann::json items = nlohmann::json::array();
  if (!itemRv.empty()) {
    auto item = leaseObject(holder, itemRv);
    item.erase("kind");
    item.erase("apiVersion");
    items.push_back(item);
  }
  return nlohmann::json{{"kind", "LeaseList"},
                        {"apiVersion", "coordination.k8s.io/v1"},
                        {"metadata", {{"resourceVersion", listRv}}},
                        {"items", items}}
      .dump();
}

inline std::string watchEvent(const std::string& type, const std::string& holder,
                              const std::string& rv) {
  return nlohmann::json{{"type", type}, {"object", leaseObject(holder, rv)}}.dump();
}

inline std::string bookmarkEvent(const std::string& rv) {
  return nlohmann::json{{"type", "BOOKMARK"},
                        {"object",
                         {{"kind", "Lease"},
                          {"apiVersion", "coordination.k8s.io/v1"},
                          {"metadata", {{"resourceVersion", rv}}}}}}
      .dump();
}

inline std::string errorEvent(int code, const std::string& reason, const std::string& message) {
  return nlohmann::json{{"type", "ERROR"},
                        {"object", nlohmann::json::parse(statusBody(code, reason, message))}}
      .dump();
}

}  // namespace leasehold::testing_support
