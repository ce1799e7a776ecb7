// Namespaces (see NamespaceHandlers.h).
#include "handlers/NamespaceHandlers.h"

#include <set>
#include <string>

#include "gocompat/GoTime.h"
#include "http/MediaTypes.h"
#include "http/StatusResponses.h"
#include "json/KubeObject.h"
#include "store/Resources.h"
#include "tables/Tables.h"

namespace apiserver {

HttpResponse namespace_get_or_list(const HttpRequest& req, const RequestInfo& info,
                                   const Store& store, const RbacPolicy& rbac) {
  static const ResDef kNs{"", "v1", "namespaces", "Namespace", "namespaces"};
  RequestInfo ri = info;
  if (ri.verb == "list") ri.ns.clear();
  if (!ri.admin && !rbac.allows(ri)) {
    J d = name_details(kNs, ri.name);
    return status_resp(
        403, "Forbidden",
        (ri.name.empty() ? std::string("namespaces") : "namespaces \"" + ri.name + "\"") +
            " is forbidden: User \"" + ri.user + "\" cannot " + ri.verb +
            " resource \"namespaces\" in API group \"\"" +
            (ri.name.empty() ? std::string(" at the cluster scope")
                             : " in the namespace \"" + ri.name + "\""),
        &d);
  }
  auto ns_obj = [](const std::string& n) {
    J o = obj();
    o["metadata"] = J{{"name", n},
                      {"resourceVersion", "1"},
                      {"creationTimestamp", format_rfc3339(0)},
                      {"labels", J{{"kubernetes.io/metadata.name", n}}}};
    o["spec"] = J{{"finalizers", J::array({"kubernetes"})}};
    o["status"] = J{{"phase", "Active"}};
    return o;
  };
  if (ri.verb == "get") {
    return json_resp(200, with_kind(ns_obj(ri.name), "Namespace", "v1"));
  } else {
    // Every namespace exists; list the ones that hold objects, plus default.
    std::set<std::string> names{"default"};
    for (auto* c : {&store.leases, &store.events, &store.pods})
      for (auto& [k, o] : c->objs)
        names.insert(k.substr(0, k.find('/')));
    J items = J::array();
    for (auto& n : names)
      items.push_back(ns_obj(n));
    AcceptInfo acc = parse_accept(req.header("accept"));
    if (!acc.table_version.empty()) {
      J rows = J::array();
      for (auto& it : items)
        rows.push_back(J{{"cells", J::array({it["metadata"]["name"], "Active", age_of(it)})},
                         {"object", J{{"kind", "PartialObjectMetadata"},
                                      {"apiVersion", "meta.k8s.io/" + acc.table_version},
                                      {"metadata", it["metadata"]}}}});
      J cols = J::array({column("Name", "string", "name", kNameDesc, 0),
                         column("Status", "string", "", "The status of the namespace", 0),
                         column("Age", "string", "", kAgeDesc, 0)});
      return json_resp(200, J{{"kind", "Table"},
                              {"apiVersion", "meta.k8s.io/" + acc.table_version},
                              {"metadata", J{{"resourceVersion", std::to_string(store.rv)}}},
                              {"columnDefinitions", cols},
                              {"rows", rows}});
    }
    return json_resp(200, J{{"kind", "NamespaceList"},
                            {"apiVersion", "v1"},
                            {"metadata", J{{"resourceVersion", std::to_string(store.rv)}}},
                            {"items", items}});
  }
}

}  // namespace apiserver
