// Seed Pods (see PodSeeds.h).
#include "store/PodSeeds.h"

#include <fstream>
#include <sstream>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "json/BodyParser.h"
#include "json/KubeObject.h"

namespace apiserver {

namespace {

J seed_pod(J pod, const std::string& ns_default) {
  if (!pod.is_object()) return pod;
  if (!pod.contains("metadata") || !pod["metadata"].is_object()) pod["metadata"] = obj();
  J& m = pod["metadata"];
  if (!m.contains("namespace")) m["namespace"] = ns_default;
  m.erase("resourceVersion");
  m.erase("managedFields");
  if (!pod.contains("spec") || !pod["spec"].is_object())
    pod["spec"] = J{{"containers", J::array({J{{"name", "app"}, {"image", "busybox"}}})}};
  if (!pod.contains("status") || !pod["status"].is_object())
    pod["status"] = J{{"phase", "Running"}};
  pod.erase("kind");
  pod.erase("apiVersion");
  return pod;
}

}  // namespace

bool load_pod_file(Store& store, const std::string& file, std::string& err) {
  std::ifstream in(file);
  if (!in) {
    err = "cannot read " + file;
    return false;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  std::vector<J> pods;
  try {
    J doc;
    std::string perr;
    std::vector<J> docs;
    if (parse_json_body(ss.str(), false, doc, perr)) {
      docs.push_back(doc);
    } else {
      for (auto& y : YAML::LoadAll(ss.str()))
        docs.push_back(yaml_to_json(y));
    }
    for (auto& d : docs) {
      if (d.is_array()) {
        for (auto& p : d)
          pods.push_back(p);
      } else if (d.is_object() && d.contains("items") && d["items"].is_array()) {
        for (auto& p : d["items"])
          pods.push_back(p);
      } else if (d.is_object()) {
        pods.push_back(d);
      }
    }
  } catch (const std::exception& e) {
    err = file + ": " + e.what();
    return false;
  }
  for (auto& p : pods) {
    J pod = seed_pod(p, "default");
    std::string name = meta_str(pod, "name"), ns = meta_str(pod, "namespace");
    if (name.empty()) continue;
    store.commit(store.pods, ns + "/" + name, pod, {}, {}, nullptr);
  }
  return true;
}

bool add_pod_spec(Store& store, const std::string& spec, std::string& err) {
  auto slash = spec.find('/');
  if (slash == std::string::npos) {
    err = "--pod wants ns/name[=ip]: " + spec;
    return false;
  }
  std::string ns = spec.substr(0, slash), rest = spec.substr(slash + 1), ip;
  auto eq = rest.find('=');
  if (eq != std::string::npos) {
    ip = rest.substr(eq + 1);
    rest = rest.substr(0, eq);
  }
  J pod = obj();
  pod["metadata"] = J{{"name", rest}, {"namespace", ns}, {"generation", 1}};
  pod["spec"] = J{{"containers", J::array({J{{"name", "app"}, {"image", "busybox"}}})},
                  {"serviceAccountName", "default"}};
  J status = J{{"phase", "Running"}};
  if (!ip.empty()) {
    status["podIP"] = ip;
    status["podIPs"] = J::array({J{{"ip", ip}}});
  }
  status["containerStatuses"] =
      J::array({J{{"name", "app"}, {"ready", true}, {"restartCount", 0}, {"image", "busybox"}}});
  pod["status"] = status;
  store.commit(store.pods, ns + "/" + rest, pod, {}, {}, nullptr);
  return true;
}

}  // namespace apiserver
