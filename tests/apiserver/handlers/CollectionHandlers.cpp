// get, list and delete (see CollectionHandlers.h).
#include "handlers/CollectionHandlers.h"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gocompat/GoQuote.h"
#include "http/MediaTypes.h"
#include "http/StatusResponses.h"
#include "json/BodyParser.h"
#include "json/KubeObject.h"
#include "store/WatchCache.h"
#include "tables/Tables.h"

namespace apiserver {

namespace {

HttpResponse serve_object(const HandlerContext& c, const Collection& col, const J& o, int code) {
  AcceptInfo acc = parse_accept(c.req.header("accept"));
  if (!acc.table_version.empty())
    return table_response(c, col, {&o}, meta_str(o, "resourceVersion"), acc);
  return json_resp(code, versioned(col.name, o, c.rd.api_version(), true));
}

}  // namespace

bool parse_selectors(const HandlerContext& c, Selector& fs, Selector& ls, HttpResponse& err) {
  std::string e;
  if (!parse_selector(c.q("fieldSelector"), false, fs, e)) {
    err = bad_request(e);
    return false;
  }
  for (auto& t : fs.terms) {
    static const std::set<std::string> kLease = {"metadata.name", "metadata.namespace"};
    static const std::set<std::string> kPod = {
        "metadata.name",      "metadata.namespace", "spec.nodeName",
        "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
        "status.phase",       "status.podIP",       "status.nominatedNodeName"};
    static const std::set<std::string> kEvent = {"metadata.name",
                                                 "metadata.namespace",
                                                 "involvedObject.kind",
                                                 "involvedObject.namespace",
                                                 "involvedObject.name",
                                                 "involvedObject.uid",
                                                 "involvedObject.apiVersion",
                                                 "involvedObject.resourceVersion",
                                                 "involvedObject.fieldPath",
                                                 "reason",
                                                 "reportingComponent",
                                                 "source",
                                                 "type"};
    const auto& known = c.rd.collection == "leases" ? kLease
                        : c.rd.collection == "pods" ? kPod
                                                    : kEvent;
    if (!known.count(t.key)) {
      err = bad_request(go_quote(t.key) +
                        " is not a known field selector: only \"metadata.name\", "
                        "\"metadata.namespace\"");
      return false;
    }
  }
  if (!parse_selector(c.q("labelSelector"), true, ls, e)) {
    err = bad_request(e);
    return false;
  }
  return true;
}

HttpResponse get_object(const HandlerContext& c) {
  Collection& col = c.st.coll(c.rd.collection);
  auto it = col.objs.find(c.info.ns + "/" + c.info.name);
  if (it == col.objs.end()) return not_found(c.rd, c.info.name);
  return serve_object(c, col, it->second.obj, 200);
}

HttpResponse list_objects(const HandlerContext& c) {
  Collection& col = c.st.coll(c.rd.collection);
  Selector fs, ls;
  HttpResponse err;
  if (!parse_selectors(c, fs, ls, err)) return err;
  AcceptInfo acc = parse_accept(c.req.header("accept"));
  if (!acc.json && acc.table_version.empty())
    return status_resp(406, "NotAcceptable",
                       "only the following media types are accepted: application/json, "
                       "application/yaml, application/vnd.kubernetes.protobuf");
  std::string rvs = c.q("resourceVersion"), match = c.q("resourceVersionMatch");
  std::map<std::string, J> snapshot;
  bool use_snapshot = false;
  std::string list_rv = std::to_string(c.st.rv);
  if (match == "Exact") {
    uint64_t want = 0;
    try {
      want = std::stoull(rvs);
    } catch (...) {
      return bad_request(
          "resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is "
          "forbidden for resourceVersion \"" +
          rvs + "\"");
    }
    if (want < col.start_rv)
      return status_resp(410, "Expired", "The resourceVersion for the provided list is too old.");
    if (want > c.st.rv)
      return status_resp(
          504, "Timeout",
          "Timeout: Too large resource version: " + rvs + ", current: " + std::to_string(c.st.rv));
    snapshot = state_at(col, want);
    use_snapshot = true;
    list_rv = rvs;
  }
  std::vector<const J*> items;
  if (use_snapshot) {
    for (auto& [k, o] : snapshot)
      if (object_matches(c.info.ns, fs, ls, o)) items.push_back(&o);
  } else {
    for (auto& [k, o] : col.objs)
      if (object_matches(c.info.ns, fs, ls, o.obj)) items.push_back(&o.obj);
  }
  // limit / continue (continue token: hex of the last key served)
  std::string cont_in = c.q("continue"), cont_out;
  if (!cont_in.empty()) {
    std::string after;
    for (size_t i = 0; i + 1 < cont_in.size(); i += 2) {
      try {
        after += static_cast<char>(std::stoi(cont_in.substr(i, 2), nullptr, 16));
      } catch (...) {
        return bad_request("continue key is not valid: illegal base64 data");
      }
    }
    std::vector<const J*> rest;
    for (auto* o : items)
      if (meta_str(*o, "namespace") + "/" + meta_str(*o, "name") > after) rest.push_back(o);
    items = rest;
  }
  int64_t remaining = 0;
  long long limit = 0;
  try {
    limit = c.q("limit").empty() ? 0 : std::stoll(c.q("limit"));
  } catch (...) {
  }
  if (limit > 0 && static_cast<size_t>(limit) < items.size()) {
    remaining = static_cast<int64_t>(items.size()) - limit;
    items.resize(static_cast<size_t>(limit));
    std::string key = meta_str(*items.back(), "namespace") + "/" + meta_str(*items.back(), "name");
    static const char* hex = "0123456789abcdef";
    for (unsigned char ch : key) {
      cont_out += hex[ch >> 4];
      cont_out += hex[ch & 15];
    }
  }
  if (!acc.table_version.empty()) return table_response(c, col, items, list_rv, acc, cont_out);
  J l = obj();
  l["kind"] = kind_of(col.name) + "List";
  l["apiVersion"] = c.rd.api_version();
  J md = J{{"resourceVersion", list_rv}};
  if (!cont_out.empty()) {
    md["continue"] = cont_out;
    md["remainingItemCount"] = remaining;
  }
  l["metadata"] = md;
  J arr = J::array();
  for (auto* o : items)
    arr.push_back(versioned(col.name, *o, c.rd.api_version(), false));
  l["items"] = arr;
  return json_resp(200, l);
}

HttpResponse delete_object(const HandlerContext& c) {
  Collection& col = c.st.coll(c.rd.collection);
  std::string key = c.info.ns + "/" + c.info.name;
  auto it = col.objs.find(key);
  if (it == col.objs.end()) return not_found(c.rd, c.info.name);
  if (!c.req.body.empty() && json_depth(c.req.body) < kMaxDepth) {
    J opts = J::parse(c.req.body, nullptr, false);
    if (opts.is_object() && opts.contains("preconditions") && opts["preconditions"].is_object()) {
      const J& p = opts["preconditions"];
      const J& m = it->second.obj["metadata"];
      if (p.contains("uid") && p["uid"].is_string() && p["uid"] != m["uid"])
        return conflict(c.rd, c.info.name,
                        "Precondition failed: UID in precondition: " + p["uid"].get<std::string>() +
                            ", UID in object meta: " + m["uid"].get<std::string>());
      if (p.contains("resourceVersion") && p["resourceVersion"].is_string() &&
          p["resourceVersion"] != m["resourceVersion"])
        return conflict(
            c.rd, c.info.name,
            "Precondition failed: ResourceVersion in precondition: " +
                p["resourceVersion"].get<std::string>() +
                ", ResourceVersion in object meta: " + m["resourceVersion"].get<std::string>());
    }
  }
  std::string uid = it->second.obj["metadata"].value("uid", std::string());
  J gone = c.st.remove(col, key);
  if (col.name == "pods") return json_resp(200, versioned(col.name, gone, "v1", true));
  J s = obj();
  s["kind"] = "Status";
  s["apiVersion"] = "v1";
  s["metadata"] = obj();
  s["status"] = "Success";
  J d = name_details(c.rd, c.info.name);
  d["uid"] = uid;
  s["details"] = d;
  return json_resp(200, s);
}

HttpResponse create_object(const HandlerContext& c, Collection& col, const std::string& key,
                           const std::string& name, bool create, J object, const Leaves& leaves) {
  J& meta = object["metadata"];
  if (create && meta.contains("resourceVersion"))
    return status_resp(500, "", "resourceVersion should not be set on objects to be created");
  if (col.objs.count(key)) return already_exists(c.rd, name);
  meta.erase("resourceVersion");
  meta.erase("uid");
  std::vector<Managed> managed;
  apply_ownership(managed, {}, leaves, c.manager, c.rd.api_version());
  Obj& o = c.st.commit(col, key, std::move(object), managed, {}, nullptr);
  return json_resp(201, versioned(col.name, o.obj, c.rd.api_version(), true));
}

}  // namespace apiserver
