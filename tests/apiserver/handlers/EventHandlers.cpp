// Event writes (see EventHandlers.h).
#include "handlers/EventHandlers.h"

#include <string>
#include <vector>

#include "gocompat/GoQuote.h"
#include "handlers/BodyChecks.h"
#include "handlers/CollectionHandlers.h"
#include "handlers/ObjectDecoding.h"
#include "handlers/PatchBody.h"
#include "http/MediaTypes.h"
#include "http/StatusResponses.h"
#include "json/KubeObject.h"
#include "store/EventVersions.h"
#include "store/ManagedFields.h"
#include "validation/FieldError.h"
#include "validation/MetadataValidation.h"

namespace apiserver {

namespace {

J reorder_meta_first(const J& o) {
  J out = obj();
  out["metadata"] = o.value("metadata", obj());
  for (auto& [k, v] : o.items())
    if (k != "metadata") out[k] = v;
  return out;
}

// Decodes an event body (core or events.k8s.io/v1) into canonical core form.
std::string decode_event(const J& in, bool v1, J& core) {
  J meta;
  std::string e = decode_meta(in.value("metadata", J()), "Event", meta);
  if (!e.empty()) return e;
  J ev = in;
  ev["metadata"] = meta;
  for (const char* k : {"reason", "message", "type", "action", "reportingComponent",
                        "reportingInstance", "note", "reportingController"})
    if (ev.contains(k) && !ev[k].is_null() && !ev[k].is_string())
      return unmarshal_err(ev[k], std::string("Event.") + k, "string");
  for (const char* k : {"count", "deprecatedCount"})
    if (ev.contains(k)) {
      J v;
      if (!(e = decode_int32(ev[k], std::string("Event.") + k, v)).empty()) return e;
      ev[k] = v;
    }
  for (const char* k :
       {"involvedObject", "regarding", "related", "source", "deprecatedSource", "series"})
    if (ev.contains(k) && !ev[k].is_null() && !ev[k].is_object())
      return unmarshal_err(ev[k], std::string("Event.") + k, "v1.ObjectReference");
  for (const char* k :
       {"firstTimestamp", "lastTimestamp", "deprecatedFirstTimestamp", "deprecatedLastTimestamp"})
    if (ev.contains(k)) {
      J v;
      if (!(e = decode_time(ev[k], v)).empty()) return e;
      ev[k] = v;
    }
  if (ev.contains("eventTime")) {
    J v;
    if (!(e = decode_micro(ev["eventTime"], v)).empty()) return e;
    ev["eventTime"] = v;
  }
  core = v1 ? v1_to_core_event(ev) : core_event_canonical(ev);
  return "";
}

FieldErrors validate_event(const J& ev, bool v1) {
  FieldErrors errs;
  auto s = [&](const J& o, const char* k) {
    return o.is_object() && o.contains(k) && o[k].is_string() ? o[k].get<std::string>()
                                                              : std::string();
  };
  const J& io = ev["involvedObject"];
  std::string ns = meta_str(ev, "namespace"), ions = s(io, "namespace");
  bool has_time = !ev["eventTime"].is_null();
  std::string rc_field = v1 ? "reportingController" : "reportingComponent";
  if (!has_time) {
    if (ions.empty()) {
      if (!ns.empty() && ns != "default")
        errs.push_back({FieldError::kInvalid, "involvedObject.namespace", go_quote(ions),
                        "does not match event.namespace"});
    } else if (ns != ions) {
      errs.push_back({FieldError::kInvalid, "involvedObject.namespace", go_quote(ions),
                      "does not match event.namespace"});
    }
  } else {
    if (ions.empty() && ns != "default" && ns != "kube-system")
      errs.push_back({FieldError::kInvalid, "involvedObject.namespace", go_quote(ions),
                      "does not match event.namespace"});
    std::string rc = s(ev, "reportingComponent");
    if (rc.empty()) errs.push_back({FieldError::kRequired, rc_field, "", ""});
    for (auto& m : qualified_name_errors(rc))
      errs.push_back({FieldError::kInvalid, rc_field, go_quote(rc), m});
    std::string ri = s(ev, "reportingInstance");
    if (ri.empty()) errs.push_back({FieldError::kRequired, "reportingInstance", "", ""});
    if (ri.size() > 128)
      errs.push_back(
          {FieldError::kInvalid, "reportingInstance", "\"\"", "can have at most 128 characters"});
    std::string ac = s(ev, "action");
    if (ac.empty()) errs.push_back({FieldError::kRequired, "action", "", ""});
    if (ac.size() > 128)
      errs.push_back({FieldError::kInvalid, "action", "\"\"", "can have at most 128 characters"});
    std::string re = s(ev, "reason");
    if (re.empty()) errs.push_back({FieldError::kRequired, "reason", "", ""});
    if (re.size() > 128)
      errs.push_back({FieldError::kInvalid, "reason", "\"\"", "can have at most 128 characters"});
    if (s(ev, "message").size() > 1024)
      errs.push_back({FieldError::kInvalid, "message", "\"\"", "can have at most 1024 characters"});
  }
  if (!v1) return errs;
  auto m =
      validate_object_name(meta_str(ev, "name"), meta_str(ev, "generateName"), "metadata.name");
  errs.insert(errs.end(), m.begin(), m.end());
  if (!has_time) errs.push_back({FieldError::kRequired, "eventTime", "", ""});
  std::string type = s(ev, "type");
  if (type != "Normal" && type != "Warning")
    errs.push_back({FieldError::kInvalid, "type", "\"\"", "has invalid value: " + type});
  if (!ev["firstTimestamp"].is_null())
    errs.push_back({FieldError::kInvalid, "deprecatedFirstTimestamp", "\"\"", "needs to be unset"});
  if (!ev["lastTimestamp"].is_null())
    errs.push_back({FieldError::kInvalid, "deprecatedLastTimestamp", "\"\"", "needs to be unset"});
  if (ev.contains("count"))
    errs.push_back({FieldError::kInvalid, "deprecatedCount", "\"\"", "needs to be unset"});
  if (!ev["source"].empty())
    errs.push_back({FieldError::kInvalid, "deprecatedSource", "\"\"", "needs to be unset"});
  return errs;
}

}  // namespace

HttpResponse event_write(const HandlerContext& c, const J& body, bool create, const Obj* old_obj) {
  bool v1 = c.rd.group == "events.k8s.io";
  if (auto e = check_gvk(c, body, "Event")) return *e;
  J ev;
  std::string derr = decode_event(body, v1, ev);
  if (!derr.empty()) return cannot_handle(c, body, "Event", derr);
  J& meta = ev["metadata"];
  if (auto e = settle_name_ns(c, meta)) return *e;
  std::string name = meta.value("name", std::string());
  if (!create && name != c.info.name)
    return bad_request("the name of the object (" + name +
                       ") does not match the name on the URL (" + c.info.name + ")");
  FieldErrors errs = validate_event(ev, v1);
  if (!errs.empty()) return invalid("Event", "", "Event", name, errs);
  if (name == "." || name == ".." || name.find('/') != std::string::npos ||
      name.find('%') != std::string::npos) {
    FieldErrors e2{{FieldError::kInvalid, "metadata.name", go_quote(name),
                    name.size() <= 2 && name[0] == '.'    ? "may not be '" + name + "'"
                    : name.find('/') != std::string::npos ? "may not contain '/'"
                                                          : "may not contain '%'"}};
    return invalid("Event", "", "Event", name, e2);
  }
  if (name.empty()) {
    FieldErrors e2{
        {FieldError::kRequired, "metadata.name", "", "name or generateName is required"}};
    return invalid("Event", "", "Event", name, e2);
  }
  Collection& col = c.st.events;
  std::string key = c.info.ns + "/" + name;
  auto it = col.objs.find(key);
  const J versioned_new = v1 ? core_to_v1_event(ev) : ev;
  if (create || it == col.objs.end())
    return create_object(c, col, key, name, create, reorder_meta_first(ev),
                         event_leaves(versioned_new));
  Obj& cur = it->second;
  std::string rv = meta.value("resourceVersion", std::string());
  if (!rv.empty() && rv != cur.obj["metadata"]["resourceVersion"])
    return conflict(c.rd, name,
                    "the object has been modified; please apply your changes to the latest "
                    "version and try again");
  (void)old_obj;
  meta.erase("resourceVersion");
  std::vector<Managed> managed = cur.managed;
  const J versioned_old = v1 ? core_to_v1_event(cur.obj) : cur.obj;
  apply_ownership(managed, event_leaves(versioned_old), event_leaves(versioned_new), c.manager,
                  c.rd.api_version());
  Obj old = cur;
  Obj& o = c.st.commit(col, key, reorder_meta_first(ev), managed, {}, &old);
  return json_resp(200, versioned("events", o.obj, c.rd.api_version(), true));
}

HttpResponse event_patch(const HandlerContext& c) {
  std::string mt = media_type(c.req.header("content-type"));
  if (mt != "application/merge-patch+json" && mt != "application/strategic-merge-patch+json" &&
      mt != "application/json-patch+json")
    return unsupported_patch();
  auto it = c.st.events.objs.find(c.info.ns + "/" + c.info.name);
  if (it == c.st.events.objs.end()) return not_found(c.rd, c.info.name);
  J result;
  if (auto e =
          apply_patch(c, versioned("events", it->second.obj, c.rd.api_version(), true), result))
    return *e;
  if (!result.is_object()) return bad_request("invalid JSON patch");
  return event_write(c, result, false, &it->second);
}

}  // namespace apiserver
