// Pod create and patch (see PodHandlers.h).
#include "handlers/PodHandlers.h"

#include <cstdint>
#include <string>
#include <vector>

#include "handlers/BodyChecks.h"
#include "handlers/ObjectDecoding.h"
#include "handlers/PatchBody.h"
#include "http/MediaTypes.h"
#include "http/StatusResponses.h"
#include "json/KubeObject.h"
#include "store/ManagedFields.h"
#include "store/RandomIds.h"
#include "validation/FieldError.h"
#include "validation/MetadataValidation.h"

namespace apiserver {

HttpResponse pod_create(const HandlerContext& c, const J& body) {
  if (auto e = check_gvk(c, body, "Pod")) return *e;
  J meta;
  std::string derr = decode_meta(body.value("metadata", J()), "Pod", meta);
  if (!derr.empty()) return cannot_handle(c, body, "Pod", derr);
  if (body.contains("spec") && !body["spec"].is_null() && !body["spec"].is_object())
    return cannot_handle(c, body, "Pod", unmarshal_err(body["spec"], "Pod.spec", "v1.PodSpec"));
  if (auto e = settle_name_ns(c, meta)) return *e;
  std::string name = meta.value("name", std::string());
  J spec = body.value("spec", obj());
  if (spec.is_null()) spec = obj();
  if (spec.contains("containers") && !spec["containers"].is_null() &&
      !spec["containers"].is_array())
    return cannot_handle(
        c, body, "Pod",
        unmarshal_err(spec["containers"], "PodSpec.spec.containers", "[]v1.Container"));
  // defaulting (owned by the creator in managedFields)
  std::vector<Path> extra;
  J containers = J::array();
  if (spec.contains("containers") && spec["containers"].is_array())
    for (auto& c0 : spec["containers"]) {
      if (!c0.is_object())
        return cannot_handle(c, body, "Pod",
                             unmarshal_err(c0, "PodSpec.spec.containers", "v1.Container"));
      J ct = c0;
      std::string image = ct.value("image", std::string());
      if (!ct.contains("resources")) ct["resources"] = obj();
      if (!ct.contains("terminationMessagePath"))
        ct["terminationMessagePath"] = "/dev/termination-log";
      if (!ct.contains("terminationMessagePolicy")) ct["terminationMessagePolicy"] = "File";
      if (!ct.contains("imagePullPolicy")) {
        auto slash = image.rfind('/');
        std::string last = image.substr(slash == std::string::npos ? 0 : slash + 1);
        bool tagged =
            last.find(':') != std::string::npos && last.substr(last.find(':') + 1) != "latest";
        ct["imagePullPolicy"] =
            (tagged || image.find('@') != std::string::npos) ? "IfNotPresent" : "Always";
      }
      std::string key = "k:{\"name\":" + dumps(ct.value("name", J(""))) + "}";
      extra.push_back({"f:spec", "f:containers", key, "."});
      for (auto& [k, v] : ct.items())
        extra.push_back({"f:spec", "f:containers", key, "f:" + k});
      containers.push_back(ct);
    }
  spec["containers"] = containers;
  J defaults = J{{"restartPolicy", "Always"},
                 {"terminationGracePeriodSeconds", 30},
                 {"dnsPolicy", "ClusterFirst"},
                 {"securityContext", obj()},
                 {"schedulerName", "default-scheduler"},
                 {"enableServiceLinks", true}};
  for (auto& [k, v] : defaults.items())
    if (!spec.contains(k)) spec[k] = v;
  for (auto& [k, v] : spec.items())
    if (k != "containers") extra.push_back({"f:spec", "f:" + k});
  // ServiceAccount admission
  std::string sa = spec.value("serviceAccountName", std::string());
  if (sa.empty()) sa = spec.value("serviceAccount", std::string("default"));
  if (sa.empty()) sa = "default";
  if (!c.st.sa_exists(c.info.ns, sa)) {
    J d = name_details(c.rd, name);
    return status_resp(403, "Forbidden",
                       "pods \"" + name + "\" is forbidden: error looking up service account " +
                           c.info.ns + "/" + sa + ": serviceaccount \"" + sa + "\" not found",
                       &d);
  }
  // validation
  FieldErrors errs =
      validate_object_name(name, meta.value("generateName", std::string()), "metadata.name");
  auto l = validate_labels(meta.value("labels", obj()), "metadata.labels");
  errs.insert(errs.end(), l.begin(), l.end());
  if (containers.empty()) errs.push_back({FieldError::kRequired, "spec.containers", "", ""});
  for (size_t i = 0; i < containers.size(); ++i) {
    std::string cn = containers[i].value("name", std::string());
    std::string p = "spec.containers[" + std::to_string(i) + "]";
    if (cn.empty()) errs.push_back({FieldError::kRequired, p + ".name", "", ""});
    if (containers[i].value("image", std::string()).empty())
      errs.push_back({FieldError::kRequired, p + ".image", "", ""});
  }
  if (!errs.empty()) return invalid("Pod", "", "Pod", name, errs);
  if (meta.contains("resourceVersion"))
    return status_resp(500, "", "resourceVersion should not be set on objects to be created");
  std::string key = c.info.ns + "/" + name;
  if (c.st.pods.objs.count(key)) return already_exists(c.rd, name);
  // admission-added fields (not owned by anyone)
  std::string vol = "kube-api-access-" + random_suffix(5);
  J volumes = spec.value("volumes", J::array());
  if (!volumes.is_array()) volumes = J::array();
  volumes.push_back(J::parse(
      R"({"name":"","projected":{"sources":[{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}},{"configMap":{"name":"kube-root-ca.crt","items":[{"key":"ca.crt","path":"ca.crt"}]}},{"downwardAPI":{"items":[{"path":"namespace","fieldRef":{"apiVersion":"v1","fieldPath":"metadata.namespace"}}]}}],"defaultMode":420}})"));
  volumes.back()["name"] = vol;
  for (auto& ct : spec["containers"]) {
    J mounts = ct.value("volumeMounts", J::array());
    mounts.push_back(J{{"name", vol},
                       {"readOnly", true},
                       {"mountPath", "/var/run/secrets/kubernetes.io/serviceaccount"}});
    ct["volumeMounts"] = mounts;
    ct = reorder(ct,
                 {"name",
                  "image",
                  "command",
                  "args",
                  "workingDir",
                  "ports",
                  "envFrom",
                  "env",
                  "resources",
                  "volumeMounts",
                  "volumeDevices",
                  "livenessProbe",
                  "readinessProbe",
                  "startupProbe",
                  "lifecycle",
                  "terminationMessagePath",
                  "terminationMessagePolicy",
                  "imagePullPolicy",
                  "securityContext",
                  "stdin",
                  "stdinOnce",
                  "tty"},
                 true);
  }
  spec["volumes"] = volumes;
  spec["serviceAccountName"] = sa;
  spec["serviceAccount"] = sa;
  if (!spec.contains("tolerations")) spec["tolerations"] = J::array();
  spec["tolerations"].push_back(J{{"key", "node.kubernetes.io/not-ready"},
                                  {"operator", "Exists"},
                                  {"effect", "NoExecute"},
                                  {"tolerationSeconds", 300}});
  spec["tolerations"].push_back(J{{"key", "node.kubernetes.io/unreachable"},
                                  {"operator", "Exists"},
                                  {"effect", "NoExecute"},
                                  {"tolerationSeconds", 300}});
  if (!spec.contains("priority")) spec["priority"] = 0;
  if (!spec.contains("preemptionPolicy")) spec["preemptionPolicy"] = "PreemptLowerPriority";
  spec = reorder(spec,
                 {"volumes",
                  "initContainers",
                  "containers",
                  "restartPolicy",
                  "terminationGracePeriodSeconds",
                  "activeDeadlineSeconds",
                  "dnsPolicy",
                  "nodeSelector",
                  "serviceAccountName",
                  "serviceAccount",
                  "nodeName",
                  "hostNetwork",
                  "securityContext",
                  "hostname",
                  "subdomain",
                  "affinity",
                  "schedulerName",
                  "tolerations",
                  "priorityClassName",
                  "priority",
                  "enableServiceLinks",
                  "preemptionPolicy"},
                 true);
  J pod = obj();
  meta.erase("uid");
  meta["generation"] = 1;  // Pods count spec generations since v1.33 (observedGeneration)
  pod["metadata"] = meta;
  pod["spec"] = spec;
  pod["status"] = J{{"phase", "Pending"}, {"qosClass", "BestEffort"}};
  Leaves leaves;
  meta_leaves(meta, leaves);
  for (auto& p : extra)
    leaves[p] = nullptr;
  std::vector<Managed> managed;
  apply_ownership(managed, {}, leaves, c.manager, "v1");
  Obj& o = c.st.commit(c.st.pods, key, pod, managed, extra, nullptr);
  return json_resp(201, with_kind(o.obj, "Pod", "v1"));
}

HttpResponse pod_patch(const HandlerContext& c) {
  std::string mt = media_type(c.req.header("content-type"));
  if (mt != "application/merge-patch+json" && mt != "application/strategic-merge-patch+json" &&
      mt != "application/json-patch+json")
    return unsupported_patch();
  std::string key = c.info.ns + "/" + c.info.name;
  auto it = c.st.pods.objs.find(key);
  if (it == c.st.pods.objs.end()) return not_found(c.rd, c.info.name);
  Obj& cur = it->second;
  J result;
  if (auto e = apply_patch(c, with_kind(cur.obj, "Pod", "v1"), result)) return *e;
  if (!result.is_object()) return bad_request("invalid JSON patch");
  J meta;
  std::string derr = decode_meta(result.value("metadata", J()), "Pod", meta);
  if (!derr.empty()) return cannot_handle(c, result, "Pod", derr);
  if (meta.value("name", std::string()) != c.info.name)
    return bad_request("the name of the object (" + meta.value("name", std::string()) +
                       ") does not match the name on the URL (" + c.info.name + ")");
  std::string rv = meta.value("resourceVersion", std::string());
  if (!rv.empty() && rv != cur.obj["metadata"]["resourceVersion"])
    return conflict(c.rd, c.info.name,
                    "the object has been modified; please apply your changes to the latest "
                    "version and try again");
  FieldErrors errs;
  auto l = validate_labels(meta.value("labels", obj()), "metadata.labels");
  errs.insert(errs.end(), l.begin(), l.end());
  auto a = validate_annotations(meta.value("annotations", obj()), "metadata.annotations");
  errs.insert(errs.end(), a.begin(), a.end());
  if (!errs.empty()) return invalid("Pod", "", "Pod", c.info.name, errs);
  J pod = cur.obj;
  J newmeta = pod["metadata"];
  for (const char* k : {"labels", "annotations", "ownerReferences", "finalizers"}) {
    if (meta.contains(k))
      newmeta[k] = meta[k];
    else
      newmeta.erase(k);
  }
  newmeta.erase("managedFields");
  pod["metadata"] = newmeta;
  if (result.contains("spec") && result["spec"].is_object()) {
    // only images may change, like the real pod update validation allows
    J s = result["spec"];
    if (s.contains("containers") && s["containers"].is_array() &&
        s["containers"].size() == pod["spec"]["containers"].size())
      for (size_t i = 0; i < s["containers"].size(); ++i)
        if (s["containers"][i].is_object() && s["containers"][i].contains("image"))
          pod["spec"]["containers"][i]["image"] = s["containers"][i]["image"];
    if (pod["spec"] != cur.obj["spec"])
      pod["metadata"]["generation"] = cur.obj["metadata"].value("generation", int64_t{0}) + 1;
  }
  J old_cmp = cur.obj;
  old_cmp["metadata"].erase("managedFields");
  if (old_cmp == pod) return json_resp(200, with_kind(cur.obj, "Pod", "v1"));
  Leaves old_l, new_l;
  meta_leaves(cur.obj["metadata"], old_l);
  meta_leaves(pod["metadata"], new_l);
  for (auto& p : cur.extra)
    old_l[p] = new_l[p] = nullptr;
  std::vector<Managed> managed = cur.managed;
  apply_ownership(managed, old_l, new_l, c.manager, "v1");
  Obj old = cur;
  Obj& o = c.st.commit(c.st.pods, key, pod, managed, old.extra, &old);
  return json_resp(200, with_kind(o.obj, "Pod", "v1"));
}
}  // namespace apiserver
