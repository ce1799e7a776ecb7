// Lease writes (see LeaseHandlers.h).
#include "handlers/LeaseHandlers.h"

#include <cstdint>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

#include "gocompat/GoQuote.h"
#include "handlers/BodyChecks.h"
#include "handlers/CollectionHandlers.h"
#include "handlers/ObjectDecoding.h"
#include "handlers/PatchBody.h"
#include "http/MediaTypes.h"
#include "http/StatusResponses.h"
#include "json/KubeObject.h"
#include "store/ManagedFields.h"
#include "validation/FieldError.h"
#include "validation/MetadataValidation.h"

namespace apiserver {

namespace {

// Lease body -> canonical {metadata, spec}. Returns "" or the Go decode error.
std::string decode_lease(const J& in, J& lease) {
  J meta;
  std::string e = decode_meta(in.value("metadata", J()), "Lease", meta);
  if (!e.empty()) return e;
  J spec = obj();
  if (in.contains("spec") && !in["spec"].is_null()) {
    const J& s = in["spec"];
    if (!s.is_object()) return unmarshal_err(s, "Lease.spec", "v1.LeaseSpec");
    J v;
    if (s.contains("holderIdentity") && !s["holderIdentity"].is_null()) {
      if (!s["holderIdentity"].is_string())
        return unmarshal_err(s["holderIdentity"], "LeaseSpec.spec.holderIdentity", "string");
      spec["holderIdentity"] = s["holderIdentity"];
    }
    if (s.contains("leaseDurationSeconds")) {
      v = J();
      if (!(e = decode_int32(s["leaseDurationSeconds"], "LeaseSpec.spec.leaseDurationSeconds", v))
               .empty())
        return e;
      if (!v.is_null()) spec["leaseDurationSeconds"] = v;
    }
    for (const char* k : {"acquireTime", "renewTime"}) {
      if (!s.contains(k)) continue;
      v = J();
      if (!(e = decode_micro(s[k], v)).empty()) return e;
      if (!v.is_null()) spec[k] = v;
    }
    if (s.contains("leaseTransitions")) {
      v = J();
      if (!(e = decode_int32(s["leaseTransitions"], "LeaseSpec.spec.leaseTransitions", v)).empty())
        return e;
      if (!v.is_null()) spec["leaseTransitions"] = v;
    }
    for (auto [k, type] : {std::pair{"strategy", "v1.CoordinatedLeaseStrategy"},
                           std::pair{"preferredHolder", "string"}}) {
      if (!s.contains(k) || s[k].is_null()) continue;
      if (!s[k].is_string()) return unmarshal_err(s[k], std::string("LeaseSpec.spec.") + k, type);
      spec[k] = s[k];
    }
  }
  lease = obj();
  lease["metadata"] = meta;
  lease["spec"] = reorder(spec,
                          {"holderIdentity", "leaseDurationSeconds", "acquireTime", "renewTime",
                           "leaseTransitions", "strategy", "preferredHolder"},
                          false);
  return "";
}

constexpr const char* kOldestEmulationVersion = "OldestEmulationVersion";

// The fields of a Lease body its type does not have, as paths in document order (what the real
// server's strict decoder warns about); an unknown object is named, not its contents.
std::vector<std::string> lease_unknown_fields(const J& body) {
  static const std::set<std::string> kTop = {"kind", "apiVersion", "metadata", "spec"};
  static const std::set<std::string> kMeta = {"name",
                                              "generateName",
                                              "namespace",
                                              "selfLink",
                                              "uid",
                                              "resourceVersion",
                                              "generation",
                                              "creationTimestamp",
                                              "deletionTimestamp",
                                              "labels",
                                              "annotations",
                                              "deletionGracePeriodSeconds",
                                              "finalizers",
                                              "managedFields",
                                              "ownerReferences"};
  static const std::set<std::string> kSpec = {
      "holderIdentity", "leaseDurationSeconds", "acquireTime", "renewTime", "leaseTransitions",
      "strategy",       "preferredHolder"};
  std::vector<std::string> out;
  if (!body.is_object()) return out;
  for (auto& [k, v] : body.items()) {
    if (!kTop.count(k)) {
      out.push_back(k);
    } else if ((k == "metadata" || k == "spec") && v.is_object()) {
      for (auto& [k2, v2] : v.items())
        if (!(k == "metadata" ? kMeta : kSpec).count(k2)) out.push_back(k + "." + k2);
    }
  }
  return out;
}

FieldErrors validate_lease(const J& lease) {
  const J& m = lease["metadata"];
  FieldErrors errs = validate_object_name(m.value("name", std::string()),
                                          m.value("generateName", std::string()), "metadata.name");
  auto l = validate_labels(m.value("labels", obj()), "metadata.labels");
  errs.insert(errs.end(), l.begin(), l.end());
  auto a = validate_annotations(m.value("annotations", obj()), "metadata.annotations");
  errs.insert(errs.end(), a.begin(), a.end());
  const J& s = lease["spec"];
  if (s.contains("leaseDurationSeconds") && s["leaseDurationSeconds"].get<int64_t>() <= 0)
    errs.push_back({FieldError::kInvalid, "spec.leaseDurationSeconds",
                    std::to_string(s["leaseDurationSeconds"].get<int64_t>()),
                    "must be greater than 0"});
  if (s.contains("leaseTransitions") && s["leaseTransitions"].get<int64_t>() < 0)
    errs.push_back({FieldError::kInvalid, "spec.leaseTransitions",
                    std::to_string(s["leaseTransitions"].get<int64_t>()),
                    "must be greater than or equal to 0"});
  // With the CoordinatedLeaderElection gate (on in the real servers the captures come from) the
  // strategy fields are kept and validated; the doubled path is the real server's.
  if (s.contains("strategy") && s["strategy"] != kOldestEmulationVersion)
    errs.push_back({FieldError::kNotSupported, "spec.strategy.strategy",
                    go_quote(s["strategy"].get<std::string>()),
                    std::string("supported values: ") + go_quote(kOldestEmulationVersion)});
  if (!s.contains("strategy") && s.contains("preferredHolder") &&
      !s["preferredHolder"].get<std::string>().empty())
    errs.push_back({FieldError::kForbidden, "spec.preferredHolder", "",
                    "may only be specified if `strategy` is defined"});
  return errs;
}

HttpResponse store_lease(const HandlerContext& c, J& lease, bool create_only, bool from_patch) {
  J& meta = lease["metadata"];
  if (auto e = settle_name_ns(c, meta)) return *e;
  Collection& col = c.st.leases;
  std::string name = meta.value("name", std::string());
  if (!create_only) {
    if (name != c.info.name)
      return bad_request("the name of the object (" + name +
                         ") does not match the name on the URL (" + c.info.name + ")");
  }
  std::string key = c.info.ns + "/" + name;
  auto it = col.objs.find(key);
  if (create_only || it == col.objs.end()) {
    FieldErrors errs = validate_lease(lease);
    if (!errs.empty())
      return invalid("Lease.coordination.k8s.io", "coordination.k8s.io", "Lease", name, errs);
    return create_object(c, col, key, name, create_only, lease, lease_leaves(lease));
  }
  Obj& cur = it->second;
  std::string rv = meta.value("resourceVersion", std::string());
  if (rv.empty()) {
    if (from_patch) {
      rv = cur.obj["metadata"]["resourceVersion"];
    } else {
      FieldErrors errs{{FieldError::kInvalid, "metadata.resourceVersion", "0",
                        "must be specified for an update"}};
      return invalid(c.rd.qualified(), "coordination.k8s.io", "leases", name, errs);
    }
  }
  if (meta.contains("uid") && meta["uid"] != cur.obj["metadata"]["uid"])
    return conflict(c.rd, name,
                    "Precondition failed: UID in precondition: " + meta["uid"].get<std::string>() +
                        ", UID in object meta: " + cur.obj["metadata"]["uid"].get<std::string>());
  if (rv != cur.obj["metadata"]["resourceVersion"])
    return conflict(c.rd, name,
                    "the object has been modified; please apply your changes to the latest "
                    "version and try again");
  FieldErrors errs = validate_lease(lease);
  if (!errs.empty())
    return invalid("Lease.coordination.k8s.io", "coordination.k8s.io", "Lease", name, errs);
  // no-op?
  J cur_cmp = cur.obj;
  cur_cmp["metadata"].erase("managedFields");
  cur_cmp["metadata"].erase("resourceVersion");
  cur_cmp["metadata"].erase("uid");
  cur_cmp["metadata"].erase("creationTimestamp");
  J new_cmp = lease;
  new_cmp["metadata"].erase("resourceVersion");
  new_cmp["metadata"].erase("uid");
  new_cmp["metadata"].erase("generateName");
  cur_cmp["metadata"].erase("generateName");
  if (cur_cmp == new_cmp) return json_resp(200, with_kind(cur.obj, "Lease", c.rd.api_version()));
  if (cur.obj["metadata"].contains("generateName"))
    meta["generateName"] = cur.obj["metadata"]["generateName"];
  std::vector<Managed> managed = cur.managed;
  apply_ownership(managed, lease_leaves(cur.obj), lease_leaves(lease), c.manager,
                  c.rd.api_version());
  Obj old = cur;
  Obj& o = c.st.commit(col, key, lease, managed, {}, &old);
  return json_resp(200, with_kind(o.obj, "Lease", c.rd.api_version()));
}

}  // namespace

HttpResponse lease_write(const HandlerContext& c, const J& body, bool create_only,
                         bool from_patch) {
  if (auto e = check_gvk(c, body, "Lease")) return *e;
  J lease;
  std::string derr = decode_lease(body, lease);
  if (!derr.empty()) return cannot_handle(c, body, "Lease", derr);
  HttpResponse r = store_lease(c, lease, create_only, from_patch);
  // Field validation "Warn" (the default since v1.27): every answer after a successful decode
  // names the dropped fields, the 422 of a PUT without resourceVersion too.
  for (auto& f : lease_unknown_fields(body))
    r.headers.push_back({"Warning", "299 - " + go_quote("unknown field " + go_quote(f))});
  return r;
}

HttpResponse lease_patch(const HandlerContext& c) {
  auto it = c.st.leases.objs.find(c.info.ns + "/" + c.info.name);
  std::string mt = media_type(c.req.header("content-type"));
  if (mt != "application/merge-patch+json" && mt != "application/strategic-merge-patch+json" &&
      mt != "application/json-patch+json")
    return unsupported_patch();
  if (it == c.st.leases.objs.end()) return not_found(c.rd, c.info.name);
  J result;
  if (auto e = apply_patch(c, with_kind(it->second.obj, "Lease", c.rd.api_version()), result))
    return *e;
  if (!result.is_object()) return bad_request("invalid JSON patch");
  return lease_write(c, result, false, true);
}

J put_lease_directly(Store& store, const std::string& ns, const std::string& name, const J& body) {
  Collection& col = store.leases;
  std::string key = ns + "/" + name;
  auto it = col.objs.find(key);
  J lease;
  std::string err = decode_lease(body, lease);
  if (!err.empty()) throw std::runtime_error(err);
  lease["metadata"]["name"] = name;
  lease["metadata"]["namespace"] = ns;
  lease["metadata"].erase("resourceVersion");
  lease["metadata"].erase("uid");
  std::vector<Managed> managed;
  if (it == col.objs.end()) {
    apply_ownership(managed, {}, lease_leaves(lease), "leasehold-test-apiserver",
                    "coordination.k8s.io/v1");
    return with_kind(store.commit(col, key, lease, managed, {}, nullptr).obj, "Lease",
                     "coordination.k8s.io/v1");
  }
  managed = it->second.managed;
  apply_ownership(managed, lease_leaves(it->second.obj), lease_leaves(lease),
                  "leasehold-test-apiserver", "coordination.k8s.io/v1");
  Obj old = it->second;
  return with_kind(store.commit(col, key, lease, managed, {}, &old).obj, "Lease",
                   "coordination.k8s.io/v1");
}

}  // namespace apiserver
