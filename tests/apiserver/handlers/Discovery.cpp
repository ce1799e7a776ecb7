// Discovery, /version, health (see Discovery.h).
#include "handlers/Discovery.h"

#include <initializer_list>

#include "http/StatusResponses.h"
#include "json/Json.h"

namespace apiserver {

namespace {

J resource_entry(const char* name, const char* kind, std::initializer_list<const char*> shorts,
                 bool all_category, const char* hash) {
  J e = obj();
  e["name"] = name;
  std::string singular = name;  // leases events pods namespaces: drop the plural s
  singular.pop_back();
  e["singularName"] = singular;
  e["namespaced"] = true;
  e["kind"] = kind;
  e["verbs"] =
      J::array({"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"});
  if (shorts.size()) {
    J s = J::array();
    for (auto* x : shorts)
      s.push_back(x);
    e["shortNames"] = s;
  }
  if (all_category) e["categories"] = J::array({"all"});
  e["storageVersionHash"] = hash;
  return e;
}

J group_entry(const char* name) {
  std::string gv = std::string(name) + "/v1";
  J v = J{{"groupVersion", gv}, {"version", "v1"}};
  return J{{"name", name}, {"versions", J::array({v})}, {"preferredVersion", v}};
}

}  // namespace

std::optional<HttpResponse> discovery(const HttpRequest& req, const std::string& path) {
  if (path == "/api") {
    J j = obj();
    j["kind"] = "APIVersions";
    j["versions"] = J::array({"v1"});
    j["serverAddressByClientCIDRs"] =
        J::array({J{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", req.local_address}}});
    return json_resp(200, j);
  }
  if (path == "/apis") {
    J j = obj();
    j["kind"] = "APIGroupList";
    j["apiVersion"] = "v1";
    j["groups"] = J::array({group_entry("events.k8s.io"), group_entry("coordination.k8s.io")});
    return json_resp(200, j);
  }
  if (path == "/apis/coordination.k8s.io" || path == "/apis/events.k8s.io") {
    J g = group_entry(path == "/apis/events.k8s.io" ? "events.k8s.io" : "coordination.k8s.io");
    J j = obj();
    j["kind"] = "APIGroup";
    j["apiVersion"] = "v1";
    for (auto& [k, v] : g.items())
      j[k] = v;
    return json_resp(200, j);
  }
  if (path == "/api/v1" || path == "/apis/coordination.k8s.io/v1" ||
      path == "/apis/events.k8s.io/v1") {
    J j = obj();
    j["kind"] = "APIResourceList";
    J res = J::array();
    if (path == "/api/v1") {
      j["groupVersion"] = "v1";
      res.push_back(resource_entry("events", "Event", {"ev"}, false, "r2yiGXH7wu8="));
      J ns = resource_entry("namespaces", "Namespace", {"ns"}, false, "Q3oi5N2YM8M=");
      ns["namespaced"] = false;
      ns["verbs"] = J::array({"get", "list"});
      res.push_back(ns);
      res.push_back(resource_entry("pods", "Pod", {"po"}, true, "xPOwRZ+Yhw8="));
    } else if (path == "/apis/events.k8s.io/v1") {
      j["apiVersion"] = "v1";
      j["groupVersion"] = "events.k8s.io/v1";
      res.push_back(resource_entry("events", "Event", {"ev"}, false, "r2yiGXH7wu8="));
    } else {
      j["apiVersion"] = "v1";
      j["groupVersion"] = "coordination.k8s.io/v1";
      res.push_back(resource_entry("leases", "Lease", {}, false, "gqkMMb/YqFM="));
    }
    j["resources"] = res;
    return json_resp(200, j);
  }
  if (path == "/version") {
    HttpResponse r;
    // The shape of v1.37's answer (pretty-printed, emulation fields); "+leasehold-test" is semver
    // build metadata, so version constraints such as helm's kubeVersion see 1.37.2.
    r.body = R"({
  "major": "1",
  "minor": "37",
  "emulationMajor": "1",
  "emulationMinor": "37",
  "minCompatibilityMajor": "1",
  "minCompatibilityMinor": "36",
  "gitVersion": "v1.37.2+leasehold-test",
  "gitCommit": "0000000000000000000000000000000000000000",
  "gitTreeState": "clean",
  "buildDate": "1970-01-01T00:00:00Z",
  "goVersion": "go1.26.8",
  "compiler": "gc",
  "platform": "linux/amd64"
})";
    return r;
  }
  if (path == "/healthz" || path == "/livez" || path == "/readyz") return text_resp(200, "ok");
  return std::nullopt;
}

}  // namespace apiserver
