// The stand-in's Kubernetes side: configuration, classification, dispatch (see Api.h).
#include "Api.h"

#include <algorithm>

#include "handlers/BodyChecks.h"
#include "handlers/CollectionHandlers.h"
#include "handlers/Discovery.h"
#include "handlers/EventHandlers.h"
#include "handlers/LeaseHandlers.h"
#include "handlers/NamespaceHandlers.h"
#include "handlers/PodHandlers.h"
#include "handlers/WatchHandler.h"
#include "http/StatusResponses.h"
#include "store/PodSeeds.h"
#include "store/Resources.h"
#include "store/WatchCache.h"

namespace apiserver {

void Api::set_watch_history(size_t n) {
  store_.history_cap = std::max<size_t>(n, 1);
}

uint64_t Api::current_rv() const {
  return store_.rv;
}

size_t Api::watcher_count() const {
  size_t n = 0;
  for (auto* c : {&store_.leases, &store_.events, &store_.pods})
    for (auto& w : c->watchers)
      if (!w.expired()) ++n;
  return n;
}

bool Api::load_pods(const std::string& file, std::string& err) {
  return load_pod_file(store_, file, err);
}

bool Api::add_pod_spec(const std::string& spec, std::string& err) {
  return apiserver::add_pod_spec(store_, spec, err);
}

RequestInfo Api::classify(const HttpRequest& req) const {
  RequestInfo info = resolve_request_info(req);
  tokens_.authenticate(req.header("authorization"), info);
  return info;
}

Result Api::handle(const HttpRequest& req, const RequestInfo& info) {
  Result res;
  if (info.bad_token) {
    res.response = status_resp(401, "Unauthorized", "Unauthorized");
    return res;
  }
  if (!info.resource_request) {
    bool public_path = info.path == "/version" || info.path == "/healthz" ||
                       info.path == "/livez" || info.path == "/readyz";
    auto d = discovery(req, info.path);
    if (d && info.user == "system:anonymous" && !public_path) {
      J det = obj();
      res.response = status_resp(
          403, "Forbidden",
          "forbidden: User \"system:anonymous\" cannot get path \"" + info.path + "\"", &det);
      return res;
    }
    res.response = d ? *d : text_resp(404, "404 page not found\n");
    return res;
  }
  if (info.group.empty() && info.version == "v1" && info.resource == "namespaces" &&
      info.subresource.empty() && (info.verb == "get" || info.verb == "list")) {
    res.response = namespace_get_or_list(req, info, store_, rbac_);
    return res;
  }
  const ResDef* rd = find_res(info.group, info.version, info.resource);
  if (!rd || !info.subresource.empty() ||
      (!info.name.empty() && info.ns.empty() && info.verb != "list" && info.verb != "watch")) {
    if (!known_group_version(info.group, info.version)) {
      res.response = text_resp(404, "404 page not found\n");
    } else {
      J d = obj();
      res.response =
          status_resp(404, "NotFound", "the server could not find the requested resource", &d);
    }
    return res;
  }
  // authorization
  if (deny_.denies(info) || (!info.admin && !rbac_.allows(info))) {
    J d = name_details(*rd, info.name);
    std::string msg =
        (info.name.empty() ? rd->qualified() : rd->qualified() + " \"" + info.name + "\"") +
        " is forbidden: User \"" + info.user + "\" cannot " + info.verb + " resource \"" +
        info.resource + "\" in API group \"" + info.group + "\"" +
        (info.ns.empty() ? std::string(" at the cluster scope")
                         : " in the namespace \"" + info.ns + "\"");
    res.response = status_resp(403, "Forbidden", msg, &d);
    return res;
  }
  HandlerContext c{req, info, *rd, store_, manager_of(req, info)};
  const std::string& v = info.verb;
  bool named = !info.name.empty() && v != "list" && v != "watch";
  if (info.ns.empty() && v != "list" && v != "watch") {
    res.response = method_not_allowed(req.method);
    return res;
  }
  if (v == "get" && named) {
    res.response = get_object(c);
  } else if (v == "list") {
    res.response = list_objects(c);
  } else if (v == "watch") {
    return watch_objects(c);
  } else if (v == "delete" && named) {
    res.response = delete_object(c);
  } else if (v == "create" || v == "update") {
    J body;
    HttpResponse err;
    if (!read_object(c, rd->kind, false, body, err)) {
      res.response = err;
      return res;
    }
    if (rd->collection == "leases") {
      res.response = lease_write(c, body, v == "create", false);
    } else if (rd->collection == "events") {
      res.response = event_write(c, body, v == "create", nullptr);
    } else if (v == "create") {
      res.response = pod_create(c, body);
    } else {
      res.response = method_not_allowed(req.method);
    }
  } else if (v == "patch" && named) {
    if (rd->collection == "leases")
      res.response = lease_patch(c);
    else if (rd->collection == "events")
      res.response = event_patch(c);
    else
      res.response = pod_patch(c);
  } else {
    res.response = method_not_allowed(req.method);
  }
  return res;
}

std::string Api::bookmark_line(Watcher& w) const {
  const Collection& col = store_.coll(w.collection);
  if (col.last_rv <= w.bookmark_rv) return "";
  w.bookmark_rv = col.last_rv;
  return bookmark_event(w, col.last_rv, false);
}

std::optional<J> Api::raw_get(const std::string& collection, const std::string& ns,
                              const std::string& name) const {
  const Collection& col = store_.coll(collection);
  auto it = col.objs.find(ns + "/" + name);
  if (it == col.objs.end()) return std::nullopt;
  return versioned(collection, it->second.obj,
                   collection == "leases" ? "coordination.k8s.io/v1" : "v1", true);
}

J Api::raw_put_lease(const std::string& ns, const std::string& name, const J& body) {
  return put_lease_directly(store_, ns, name, body);
}

bool Api::raw_delete(const std::string& collection, const std::string& ns,
                     const std::string& name) {
  Collection& col = store_.coll(collection);
  std::string key = ns + "/" + name;
  if (!col.objs.count(key)) return false;
  store_.remove(col, key);
  return true;
}

}  // namespace apiserver
