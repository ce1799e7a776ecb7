#include "api.h"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <fstream>
#include <random>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "gocompat/GoQuote.h"
#include "gocompat/GoTime.h"
#include "gocompat/HumanDuration.h"
#include "store/RandomIds.h"
#include "validation/FieldError.h"
#include "validation/MetadataValidation.h"

namespace apiserver {

namespace {

using Path = std::vector<std::string>;
using Leaves = std::map<Path, J>;

constexpr size_t kMaxDepth = 100;
constexpr size_t kMaxEventsStored = 20000;
constexpr size_t kMaxObjects = 100000;
constexpr size_t kMaxWatchQueueBytes = 32u << 20;

// ------------------------------------------------------------------------------------ resources
struct ResDef {
  std::string group, version, resource, kind, collection;
  std::string api_version() const { return group.empty() ? version : group + "/" + version; }
  std::string qualified() const { return group.empty() ? resource : resource + "." + group; }
  std::string qualified_kind() const { return group.empty() ? kind : kind + "." + group; }
};

const ResDef kLeases{"coordination.k8s.io", "v1", "leases", "Lease", "leases"};
const ResDef kCoreEvents{"", "v1", "events", "Event", "events"};
const ResDef kEventsV1{"events.k8s.io", "v1", "events", "Event", "events"};
const ResDef kPods{"", "v1", "pods", "Pod", "pods"};

const ResDef* find_res(const std::string& group, const std::string& version,
                       const std::string& resource) {
  for (const ResDef* r : {&kLeases, &kCoreEvents, &kEventsV1, &kPods})
    if (r->group == group && r->version == version && r->resource == resource) return r;
  return nullptr;
}

bool known_group_version(const std::string& group, const std::string& version) {
  return version == "v1" &&
         (group.empty() || group == "coordination.k8s.io" || group == "events.k8s.io");
}

// ------------------------------------------------------------------------------------ JSON bits
J obj() {
  return J::object();
}

const char* go_json_type(const J& v) {
  if (v.is_string()) return "string";
  if (v.is_number()) return "number";
  if (v.is_boolean()) return "bool";
  if (v.is_array()) return "array";
  if (v.is_object()) return "object";
  return "null";
}

std::string unmarshal_err(const J& v, const std::string& field, const std::string& type) {
  std::string t = go_json_type(v);
  if (v.is_number() && (type == "int32" || type == "int64")) t = "number " + dumps(v);
  return "json: cannot unmarshal " + t + " into Go struct field " + field + " of type " + type;
}

J reorder(const J& in, std::initializer_list<const char*> order, bool keep_rest) {
  if (!in.is_object()) return in;
  J out = obj();
  for (const char* k : order)
    if (in.contains(k)) out[k] = in.at(k);
  if (keep_rest)
    for (auto& [k, v] : in.items())
      if (!out.contains(k)) out[k] = v;
  return out;
}

J canonical_meta(const J& m) {
  return reorder(
      m,
      {"name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
       "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
       "annotations", "ownerReferences", "finalizers", "managedFields"},
      false);
}

J with_kind(const J& o, const std::string& kind, const std::string& api_version) {
  J out = obj();
  out["kind"] = kind;
  out["apiVersion"] = api_version;
  for (auto& [k, v] : o.items())
    if (k != "kind" && k != "apiVersion") out[k] = v;
  return out;
}

std::string meta_str(const J& o, const char* key) {
  if (!o.is_object() || !o.contains("metadata")) return "";
  const J& m = o["metadata"];
  if (!m.is_object() || !m.contains(key) || !m[key].is_string()) return "";
  return m[key].get<std::string>();
}

// ------------------------------------------------------------------------------------ errors
HttpResponse status_resp(int code, const std::string& reason, const std::string& message,
                         const J* details = nullptr) {
  HttpResponse r;
  r.status = code;
  r.body = status_json(code, reason, message, details);
  return r;
}

J name_details(const ResDef& rd, const std::string& name) {
  J d = obj();
  if (!name.empty()) d["name"] = name;
  if (!rd.group.empty()) d["group"] = rd.group;
  d["kind"] = rd.resource;
  return d;
}

HttpResponse not_found(const ResDef& rd, const std::string& name) {
  J d = name_details(rd, name);
  return status_resp(404, "NotFound", rd.qualified() + " \"" + name + "\" not found", &d);
}

HttpResponse already_exists(const ResDef& rd, const std::string& name) {
  J d = name_details(rd, name);
  return status_resp(409, "AlreadyExists", rd.qualified() + " \"" + name + "\" already exists", &d);
}

HttpResponse conflict(const ResDef& rd, const std::string& name, const std::string& why) {
  J d = name_details(rd, name);
  return status_resp(
      409, "Conflict",
      "Operation cannot be fulfilled on " + rd.qualified() + " \"" + name + "\": " + why, &d);
}

HttpResponse bad_request(const std::string& msg) {
  return status_resp(400, "BadRequest", msg);
}

HttpResponse invalid(const std::string& qkind, const std::string& group,
                     const std::string& detail_kind, const std::string& name,
                     const FieldErrors& errs) {
  std::vector<std::string> msgs;
  for (auto& e : errs) {
    std::string m = e.error();
    if (std::find(msgs.begin(), msgs.end(), m) == msgs.end()) msgs.push_back(m);
  }
  std::string agg;
  if (msgs.size() == 1) {
    agg = msgs[0];
  } else {
    agg = "[";
    for (size_t i = 0; i < msgs.size(); ++i)
      agg += (i ? ", " : "") + msgs[i];
    agg += "]";
  }
  J d = obj();
  if (!name.empty()) d["name"] = name;
  if (!group.empty()) d["group"] = group;
  d["kind"] = detail_kind;
  J causes = J::array();
  for (auto& e : errs)
    causes.push_back(J{{"reason", e.reason()}, {"message", e.body()}, {"field", e.field}});
  d["causes"] = causes;
  return status_resp(422, "Invalid", qkind + " \"" + name + "\" is invalid: " + agg, &d);
}

HttpResponse unsupported_put() {
  return status_resp(415, "UnsupportedMediaType",
                     "the body of the request was in an unknown format - accepted media types "
                     "include: application/json, application/yaml, "
                     "application/vnd.kubernetes.protobuf");
}

HttpResponse unsupported_patch() {
  J d = obj();
  return status_resp(415, "UnsupportedMediaType", "415: Unsupported Media Type", &d);
}

HttpResponse method_not_allowed(const std::string& method) {
  J d = obj();
  return status_resp(
      405, "MethodNotAllowed",
      "the server does not allow this method on the requested resource (" + method + ")", &d);
}

HttpResponse text_resp(int code, const std::string& body) {
  HttpResponse r;
  r.status = code;
  r.content_type = "text/plain; charset=utf-8";
  r.body = body;
  return r;
}

HttpResponse json_resp(int code, const J& j) {
  HttpResponse r;
  r.status = code;
  r.body = dumps(j) + "\n";
  return r;
}

std::string media_type(const std::string& ct) {
  std::string t = ct.substr(0, ct.find(';'));
  std::string out;
  for (char c : t)
    if (c != ' ' && c != '\t')
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// ------------------------------------------------------------------------------------ YAML
J yaml_to_json(const YAML::Node& n, int depth = 0) {
  if (depth > 64) throw std::runtime_error("YAML nested too deeply");
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      J o = obj();
      for (auto it = n.begin(); it != n.end(); ++it)
        o[it->first.as<std::string>()] = yaml_to_json(it->second, depth + 1);
      return o;
    }
    case YAML::NodeType::Sequence: {
      J a = J::array();
      for (auto it = n.begin(); it != n.end(); ++it)
        a.push_back(yaml_to_json(*it, depth + 1));
      return a;
    }
    case YAML::NodeType::Scalar: {
      const std::string& s = n.Scalar();
      if (n.Tag() == "!") return s;  // quoted
      if (s == "null" || s == "~" || s.empty()) return nullptr;
      if (s == "true" || s == "True") return true;
      if (s == "false" || s == "False") return false;
      try {
        size_t pos = 0;
        long long v = std::stoll(s, &pos);
        if (pos == s.size()) return v;
        double d = std::stod(s, &pos);
        if (pos == s.size()) return d;
      } catch (...) {
      }
      return s;
    }
    default:
      return nullptr;
  }
}

// Parses a request body (JSON, or YAML for application/yaml). On failure returns the Go-style
// parse error text.
bool parse_json_body(const std::string& body, bool yaml, J& out, std::string& err) {
  if (json_depth(body) > kMaxDepth) {
    err = "exceeded max depth";
    return false;
  }
  try {
    out = J::parse(body);
    return true;
  } catch (const J::parse_error& e) {
    if (e.byte >= body.size() || body.find_first_not_of(" \t\r\n") == std::string::npos) {
      err = "unexpected end of JSON input";
    } else {
      size_t i = e.byte > 0 ? e.byte - 1 : 0;
      err = std::string("invalid character ") + "'" + body[i] + "'" +
            " looking for beginning of value";
    }
  }
  size_t indicators = 0;
  for (char ch : body)
    if (ch == '-' || ch == '[' || ch == '{' || ch == ':' || ch == '?' || ch == '&' || ch == '*')
      ++indicators;
  if (yaml && body.size() <= (64u << 10) && indicators <= 400) {
    try {
      out = yaml_to_json(YAML::Load(body));
      return true;
    } catch (const std::exception& e) {
      err = std::string("yaml: ") + e.what();
    }
  }
  return false;
}

// ------------------------------------------------------------------------------------ selectors
bool parse_selector(const std::string& s, bool label, Selector& out, std::string& err) {
  out.terms.clear();
  std::vector<std::string> parts;
  std::string cur;
  int paren = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (!label && c == '\\' && i + 1 < s.size()) {
      cur += s[++i];
      continue;
    }
    if (c == '(') ++paren;
    if (c == ')') --paren;
    if (c == ',' && paren == 0) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(cur);
  auto trim = [](std::string v) {
    size_t a = v.find_first_not_of(" \t"), b = v.find_last_not_of(" \t");
    return a == std::string::npos ? std::string() : v.substr(a, b - a + 1);
  };
  for (auto& p0 : parts) {
    std::string p = trim(p0);
    if (p.empty()) {
      if (parts.size() == 1) return true;
      err = "invalid selector: empty term";
      return false;
    }
    Selector::Term t;
    size_t pos;
    if ((pos = p.find("!=")) != std::string::npos) {
      t.op = Selector::Term::kNe;
      t.key = trim(p.substr(0, pos));
      t.value = trim(p.substr(pos + 2));
    } else if ((pos = p.find("==")) != std::string::npos) {
      t.key = trim(p.substr(0, pos));
      t.value = trim(p.substr(pos + 2));
    } else if ((pos = p.find('=')) != std::string::npos) {
      t.key = trim(p.substr(0, pos));
      t.value = trim(p.substr(pos + 1));
    } else if (label && p[0] == '!') {
      t.op = Selector::Term::kNotExists;
      t.key = trim(p.substr(1));
    } else if (label && (pos = p.find(" notin ")) != std::string::npos) {
      t.op = Selector::Term::kNe;
      t.key = trim(p.substr(0, pos));
      t.value = "\x01" + trim(p.substr(pos + 7));
    } else if (label && (pos = p.find(" in ")) != std::string::npos) {
      t.op = Selector::Term::kEq;
      t.key = trim(p.substr(0, pos));
      t.value = "\x01" + trim(p.substr(pos + 4));
    } else if (label) {
      t.op = Selector::Term::kExists;
      t.key = p;
    } else {
      err = "invalid selector: '" + s + "'; can't understand '" + p + "'";
      return false;
    }
    if (t.key.empty()) {
      err = "invalid selector: '" + s + "'";
      return false;
    }
    if (label && !qualified_name_errors(t.key).empty()) {
      err = "unable to parse requirement: " + qualified_name_errors(t.key)[0];
      return false;
    }
    out.terms.push_back(t);
  }
  return true;
}

bool in_set(const std::string& value, const std::string& set_spec) {
  std::string s = set_spec.substr(1);
  if (!s.empty() && s.front() == '(') s.erase(0, 1);
  if (!s.empty() && s.back() == ')') s.pop_back();
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t a = item.find_first_not_of(" "), b = item.find_last_not_of(" ");
    if (a != std::string::npos && item.substr(a, b - a + 1) == value) return true;
  }
  return false;
}

std::optional<std::string> json_path_str(const J& o, const std::string& path) {
  const J* cur = &o;
  std::stringstream ss(path);
  std::string seg;
  while (std::getline(ss, seg, '.')) {
    if (!cur->is_object() || !cur->contains(seg)) return std::nullopt;
    cur = &(*cur)[seg];
  }
  if (cur->is_string()) return cur->get<std::string>();
  if (cur->is_null()) return std::nullopt;
  return dumps(*cur);
}

// ------------------------------------------------------------------------------------
// managedFields
struct Managed {
  std::string manager, api_version, time;
  std::set<Path> fields;
};

void meta_leaves(const J& meta, Leaves& out) {
  if (!meta.is_object()) return;
  for (const char* m : {"labels", "annotations"}) {
    if (!meta.contains(m) || !meta[m].is_object() || meta[m].empty()) continue;
    out[{"f:metadata", std::string("f:") + m, "."}] = true;
    for (auto& [k, v] : meta[m].items())
      out[{"f:metadata", std::string("f:") + m, "f:" + k}] = v;
  }
}

bool empty_value(const J& v) {
  return v.is_null() || (v.is_string() && v.get<std::string>().empty()) ||
         (v.is_number() && v == 0) || (v.is_object() && v.empty()) || (v.is_array() && v.empty()) ||
         (v.is_boolean() && !v.get<bool>());
}

Leaves lease_leaves(const J& o) {
  Leaves l;
  meta_leaves(o.value("metadata", obj()), l);
  if (o.contains("spec") && o["spec"].is_object())
    for (auto& [k, v] : o["spec"].items())
      l[{"f:spec", "f:" + k}] = v;
  return l;
}

Leaves event_leaves(const J& versioned) {
  Leaves l;
  meta_leaves(versioned.value("metadata", obj()), l);
  for (auto& [k, v] : versioned.items()) {
    if (k == "kind" || k == "apiVersion" || k == "metadata" || empty_value(v)) continue;
    if (v.is_object() && k != "involvedObject" && k != "regarding" && k != "related") {
      for (auto& [k2, v2] : v.items())
        if (!empty_value(v2)) l[{"f:" + k, "f:" + k2}] = v2;
    } else {
      l[{"f:" + k}] = v;
    }
  }
  return l;
}

void apply_ownership(std::vector<Managed>& managed, const Leaves& old_l, const Leaves& new_l,
                     const std::string& manager, const std::string& api_version) {
  std::set<Path> changed;
  for (auto& [p, v] : new_l) {
    auto it = old_l.find(p);
    if (it == old_l.end() || it->second != v) changed.insert(p);
  }
  bool found = false;
  for (auto& m : managed) {
    std::set<Path> keep;
    for (auto& p : m.fields)
      if (new_l.count(p) && (m.manager == manager || !changed.count(p))) keep.insert(p);
    if (m.manager == manager) {
      found = true;
      keep.insert(changed.begin(), changed.end());
      if (keep != m.fields || !changed.empty()) {
        m.time = rfc3339_now();
        m.api_version = api_version;
      }
    }
    m.fields = std::move(keep);
  }
  if (!found && !changed.empty()) managed.push_back({manager, api_version, rfc3339_now(), changed});
  managed.erase(std::remove_if(managed.begin(), managed.end(),
                               [](const Managed& m) { return m.fields.empty(); }),
                managed.end());
}

J render_managed(const std::vector<Managed>& managed) {
  J arr = J::array();
  for (auto& m : managed) {
    nlohmann::json root = nlohmann::json::object();
    for (auto& p : m.fields) {
      nlohmann::json* node = &root;
      for (auto& seg : p) {
        if (!node->is_object()) *node = nlohmann::json::object();
        node = &(*node)[seg];
      }
      if (!node->is_object()) *node = nlohmann::json::object();
    }
    J e = obj();
    e["manager"] = m.manager;
    e["operation"] = "Update";
    e["apiVersion"] = m.api_version;
    e["time"] = m.time;
    e["fieldsType"] = "FieldsV1";
    e["fieldsV1"] = J::parse(root.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    arr.push_back(e);
  }
  return arr;
}

// ------------------------------------------------------------------------------------ events
J core_event_canonical(const J& e) {
  J out = obj();
  out["metadata"] = e.value("metadata", obj());
  out["involvedObject"] = e.contains("involvedObject") && e["involvedObject"].is_object()
                              ? reorder(e["involvedObject"],
                                        {"kind", "namespace", "name", "uid", "apiVersion",
                                         "resourceVersion", "fieldPath"},
                                        false)
                              : obj();
  for (const char* k : {"reason", "message"})
    if (e.contains(k) && e[k].is_string() && !e[k].get<std::string>().empty()) out[k] = e[k];
  J src = obj();
  if (e.contains("source") && e["source"].is_object())
    for (const char* k : {"component", "host"})
      if (e["source"].contains(k) && e["source"][k].is_string() &&
          !e["source"][k].get<std::string>().empty())
        src[k] = e["source"][k];
  out["source"] = src;
  out["firstTimestamp"] = e.value("firstTimestamp", J());
  out["lastTimestamp"] = e.value("lastTimestamp", J());
  if (e.contains("count") && e["count"].is_number() && e["count"] != 0) out["count"] = e["count"];
  if (e.contains("type") && e["type"].is_string() && !e["type"].get<std::string>().empty())
    out["type"] = e["type"];
  out["eventTime"] = e.value("eventTime", J());
  if (e.contains("series") && e["series"].is_object()) out["series"] = e["series"];
  if (e.contains("action") && e["action"].is_string() && !e["action"].get<std::string>().empty())
    out["action"] = e["action"];
  if (e.contains("related") && e["related"].is_object()) out["related"] = e["related"];
  out["reportingComponent"] =
      e.contains("reportingComponent") && e["reportingComponent"].is_string()
          ? e["reportingComponent"]
          : J("");
  out["reportingInstance"] = e.contains("reportingInstance") && e["reportingInstance"].is_string()
                                 ? e["reportingInstance"]
                                 : J("");
  return out;
}

J core_to_v1_event(const J& c) {
  J out = obj();
  out["metadata"] = c.value("metadata", obj());
  out["eventTime"] = c.value("eventTime", J());
  if (c.contains("series")) out["series"] = c["series"];
  auto str = [&](const char* k) {
    return c.contains(k) && c[k].is_string() ? c[k].get<std::string>() : std::string();
  };
  if (!str("reportingComponent").empty()) out["reportingController"] = str("reportingComponent");
  if (!str("reportingInstance").empty()) out["reportingInstance"] = str("reportingInstance");
  if (!str("action").empty()) out["action"] = str("action");
  if (!str("reason").empty()) out["reason"] = str("reason");
  out["regarding"] = c.value("involvedObject", obj());
  if (c.contains("related")) out["related"] = c["related"];
  if (!str("message").empty()) out["note"] = str("message");
  if (!str("type").empty()) out["type"] = str("type");
  out["deprecatedSource"] = c.value("source", obj());
  out["deprecatedFirstTimestamp"] = c.value("firstTimestamp", J());
  out["deprecatedLastTimestamp"] = c.value("lastTimestamp", J());
  if (c.contains("count")) out["deprecatedCount"] = c["count"];
  return out;
}

J v1_to_core_event(const J& v) {
  J c = obj();
  c["metadata"] = v.value("metadata", obj());
  c["involvedObject"] = v.value("regarding", obj());
  for (auto [from, to] : std::initializer_list<std::pair<const char*, const char*>>{
           {"reason", "reason"},
           {"note", "message"},
           {"deprecatedSource", "source"},
           {"deprecatedFirstTimestamp", "firstTimestamp"},
           {"deprecatedLastTimestamp", "lastTimestamp"},
           {"deprecatedCount", "count"},
           {"type", "type"},
           {"eventTime", "eventTime"},
           {"series", "series"},
           {"action", "action"},
           {"related", "related"},
           {"reportingController", "reportingComponent"},
           {"reportingInstance", "reportingInstance"}})
    if (v.contains(from)) c[to] = v[from];
  return core_event_canonical(c);
}

J empty_object_for(const std::string& collection) {
  if (collection == "leases") return J{{"spec", obj()}};
  if (collection == "pods") return J{{"spec", J{{"containers", nullptr}}}, {"status", obj()}};
  return J{{"involvedObject", obj()},  {"source", obj()},      {"firstTimestamp", nullptr},
           {"lastTimestamp", nullptr}, {"eventTime", nullptr}, {"reportingComponent", ""},
           {"reportingInstance", ""}};
}

// ------------------------------------------------------------------------------------ tables
const char* kNameDesc =
    "Name must be unique within a namespace. Is required when creating resources, although some "
    "resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const char* kAgeDesc =
    "CreationTimestamp is a timestamp representing the server time when this object was created. "
    "It is not guaranteed to be set in happens-before order across separate operations. Clients "
    "may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the "
    "system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/"
    "api-conventions.md#metadata";

J column(const char* name, const char* type, const char* format, const char* desc, int prio) {
  J c = obj();
  c["name"] = name;
  c["type"] = type;
  c["format"] = format;
  c["description"] = desc;
  c["priority"] = prio;
  return c;
}

std::string age_of(const J& o) {
  std::string ts = meta_str(o, "creationTimestamp");
  if (ts.empty()) return "<unknown>";
  GoTime t = go_parse_time(ts, false);
  if (!t.ok) return "<unknown>";
  return human_duration(unix_now_s() - t.unix_s);
}

J table_columns(const std::string& collection) {
  J cols = J::array();
  cols.push_back(column("Name", "string", "name", kNameDesc, 0));
  if (collection == "leases") {
    cols.push_back(column("Holder", "string", "",
                          "holderIdentity contains the identity of the holder of a current lease. "
                          "If Coordinated Leader Election is used, the holder identity must be "
                          "equal to the elected LeaseCandidate.metadata.name field.",
                          0));
    cols.push_back(column("Age", "string", "", kAgeDesc, 0));
  } else if (collection == "pods") {
    cols.push_back(column("Ready", "string", "",
                          "The aggregate readiness state of this pod for accepting traffic.", 0));
    cols.push_back(
        column("Status", "string", "", "The aggregate status of the containers in this pod.", 0));
    cols.push_back(column("Restarts", "string", "",
                          "The number of times the containers in this pod have been restarted "
                          "and when the last container in this pod has restarted.",
                          0));
    cols.push_back(column("Age", "string", "", kAgeDesc, 0));
    cols.push_back(column("IP", "string", "",
                          "IP address allocated to the pod. Routable at least within the "
                          "cluster. Empty if not yet allocated.",
                          1));
    cols.push_back(column("Node", "string", "",
                          "NodeName is a request to schedule this pod onto a specific node.", 1));
    cols.push_back(column("Nominated Node", "string", "",
                          "nominatedNodeName is set only when this pod preempts other pods on "
                          "the node.",
                          1));
    cols.push_back(column("Readiness Gates", "string", "",
                          "If specified, all readiness gates will be evaluated for pod readiness.",
                          1));
  } else {
    cols = J::array();
    cols.push_back(column("Last Seen", "string", "",
                          "The time at which the most recent occurrence of this event was "
                          "recorded.",
                          0));
    cols.push_back(column("Type", "string", "", "Type of this event (Normal, Warning).", 0));
    cols.push_back(column("Reason", "string", "", "Why the action was taken.", 0));
    cols.push_back(column("Object", "string", "", "The object that this event is about.", 0));
    cols.push_back(column("Message", "string", "", "A human-readable description.", 0));
  }
  return cols;
}

J table_cells(const std::string& collection, const J& o) {
  J cells = J::array();
  std::string name = meta_str(o, "name");
  if (collection == "leases") {
    cells.push_back(name);
    cells.push_back(o.contains("spec") && o["spec"].contains("holderIdentity") &&
                            o["spec"]["holderIdentity"].is_string()
                        ? o["spec"]["holderIdentity"]
                        : J(""));
    cells.push_back(age_of(o));
  } else if (collection == "pods") {
    const J st = o.value("status", obj());
    size_t total = 0, ready = 0;
    int64_t restarts = 0;
    if (o.contains("spec") && o["spec"].contains("containers") &&
        o["spec"]["containers"].is_array())
      total = o["spec"]["containers"].size();
    if (st.contains("containerStatuses") && st["containerStatuses"].is_array())
      for (auto& cs : st["containerStatuses"]) {
        if (cs.value("ready", false)) ++ready;
        if (cs.contains("restartCount") && cs["restartCount"].is_number_integer())
          restarts += cs["restartCount"].get<int64_t>();
      }
    cells.push_back(name);
    cells.push_back(std::to_string(ready) + "/" + std::to_string(total));
    std::string phase = st.contains("phase") && st["phase"].is_string()
                            ? st["phase"].get<std::string>()
                            : std::string();
    if (st.contains("reason") && st["reason"].is_string()) phase = st["reason"];
    cells.push_back(phase);
    cells.push_back(restarts);
    cells.push_back(age_of(o));
    cells.push_back(st.contains("podIP") && st["podIP"].is_string() ? st["podIP"] : J("<none>"));
    cells.push_back(o.contains("spec") && o["spec"].contains("nodeName") ? o["spec"]["nodeName"]
                                                                         : J("<none>"));
    cells.push_back("<none>");
    cells.push_back("<none>");
  } else {
    std::string last = o.contains("lastTimestamp") && o["lastTimestamp"].is_string()
                           ? o["lastTimestamp"].get<std::string>()
                           : (o.contains("eventTime") && o["eventTime"].is_string()
                                  ? o["eventTime"].get<std::string>()
                                  : std::string());
    GoTime t = go_parse_time(last, false);
    cells.push_back(t.ok ? human_duration(unix_now_s() - t.unix_s) : std::string("<unknown>"));
    cells.push_back(o.value("type", std::string()));
    cells.push_back(o.value("reason", std::string()));
    J io = o.value("involvedObject", obj());
    std::string kind = io.value("kind", std::string());
    for (auto& c : kind)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    cells.push_back(kind + "/" + io.value("name", std::string()));
    cells.push_back(o.value("message", std::string()));
  }
  return cells;
}

// ------------------------------------------------------------------------------------ accept
struct AcceptInfo {
  bool json = false;
  std::string table_version;  // "v1" / "v1beta1" / ""
};

AcceptInfo parse_accept(const std::string& accept) {
  AcceptInfo a;
  if (accept.empty()) {
    a.json = true;
    return a;
  }
  std::stringstream ss(accept);
  std::string range;
  while (std::getline(ss, range, ',')) {
    std::vector<std::string> parts;
    std::stringstream rs(range);
    std::string p;
    while (std::getline(rs, p, ';')) {
      std::string t;
      for (char c : p)
        if (c != ' ' && c != '\t') t += c;
      parts.push_back(t);
    }
    if (parts.empty()) continue;
    std::string type = parts[0];
    for (auto& c : type)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::map<std::string, std::string> params;
    for (size_t i = 1; i < parts.size(); ++i) {
      auto eq = parts[i].find('=');
      if (eq != std::string::npos) params[parts[i].substr(0, eq)] = parts[i].substr(eq + 1);
    }
    bool json_like = type == "application/json" || type == "*/*" || type == "application/*";
    if (!json_like) continue;
    if (params.count("as")) {
      if (params["as"] == "Table" && params["g"] == "meta.k8s.io" &&
          (params["v"] == "v1" || params["v"] == "v1beta1") && a.table_version.empty())
        a.table_version = params["v"];
      continue;
    }
    a.json = true;
  }
  return a;
}

}  // namespace

// ============================================================================================
// Store
struct Obj {
  J obj;  // without kind/apiVersion
  std::vector<Managed> managed;
  std::vector<Path> extra;  // pods: spec leaves owned by the creator
  uint64_t rv = 0;
};

struct HistEvent {
  uint64_t rv;
  std::string type;
  std::string key;
  J obj;
  std::optional<J> prev;
};

struct Collection {
  explicit Collection(std::string n) : name(std::move(n)) {}
  std::string name;
  std::map<std::string, Obj> objs;  // "ns/name"
  std::deque<HistEvent> history;
  uint64_t start_rv = 1;
  uint64_t last_rv = 1;
  std::vector<std::weak_ptr<Watcher>> watchers;
};

struct Rule {
  std::vector<std::string> verbs, groups, resources, names;
};
struct Binding {
  std::string ns;  // "" for ClusterRoleBinding
  std::string role_kind, role_name;
  std::vector<std::pair<std::string, std::string>> subjects;  // kind, full name
};

class Store {
 public:
  uint64_t rv = 1;
  size_t history_cap = 1000;
  Collection leases{"leases"}, events{"events"}, pods{"pods"};
  std::set<std::pair<std::string, std::string>> service_accounts;
  std::map<std::string, std::vector<Rule>> roles;  // "ns/name", cluster roles "/name"
  std::vector<Binding> bindings;
  std::vector<std::array<std::string, 3>> deny;

  Collection& coll(const std::string& n) {
    if (n == "leases") return leases;
    if (n == "events") return events;
    return pods;
  }
  const Collection& coll(const std::string& n) const { return const_cast<Store*>(this)->coll(n); }

  std::string kind_of(const std::string& collection) const {
    return collection == "leases" ? "Lease" : collection == "pods" ? "Pod" : "Event";
  }

  // The object as served by `api_version` (events convert), with kind/apiVersion.
  J versioned(const std::string& collection, const J& o, const std::string& api_version,
              bool with_type) const {
    J body = o;
    if (collection == "events" && api_version == "events.k8s.io/v1") body = core_to_v1_event(o);
    if (!with_type) return body;
    return with_kind(body, kind_of(collection), api_version);
  }

  std::string event_line(const std::string& type, const J& o) const {
    return dumps(J{{"type", type}, {"object", o}}) + "\n";
  }

  // A BOOKMARK at `rv`: an empty object of the watched kind (no creationTimestamp since v1.33's
  // omitzero), annotated when it ends the initial events.
  std::string bookmark_event(const Watcher& w, uint64_t rv, bool initial_end) const {
    J m = J{{"resourceVersion", std::to_string(rv)}};
    if (initial_end) m["annotations"] = J{{"k8s.io/initial-events-end", "true"}};
    J full = obj();
    full["kind"] = kind_of(w.collection);
    full["apiVersion"] = w.api_version;
    full["metadata"] = m;
    J empty = empty_object_for(w.collection);  // named: items() of a temporary would dangle
    for (auto& [k, v] : empty.items())
      full[k] = v;
    return event_line("BOOKMARK", full);
  }

  void record(Collection& c, const std::string& type, const std::string& key, const J& o,
              std::optional<J> prev) {
    uint64_t erv = std::stoull(meta_str(o, "resourceVersion"));
    c.history.push_back({erv, type, key, o, std::move(prev)});
    while (c.history.size() > history_cap) {
      c.start_rv = c.history.front().rv;
      c.history.pop_front();
    }
    c.last_rv = erv;
    std::string ns = key.substr(0, key.find('/'));
    std::map<std::string, std::string> lines;
    for (auto it = c.watchers.begin(); it != c.watchers.end();) {
      auto w = it->lock();
      if (!w) {
        it = c.watchers.erase(it);
        continue;
      }
      ++it;
      if (w->overflow || erv <= w->start_rv || !watch_matches(*w, o)) continue;
      auto& line = lines[w->api_version];
      if (line.empty()) line = event_line(type, versioned(c.name, o, w->api_version, true));
      w->queue.push_back(line);
      w->queued_bytes += line.size();
      if (w->queued_bytes > kMaxWatchQueueBytes) w->overflow = true;
      if (w->wake) w->wake();
    }
  }

  static bool object_matches(const std::string& ns, const Selector& fields, const Selector& labels,
                             const J& o) {
    if (!ns.empty() && meta_str(o, "namespace") != ns) return false;
    bool ok = fields.matches([&](const std::string& k) -> std::optional<std::string> {
      if (k == "source") return json_path_str(o, "source.component").value_or("");
      return json_path_str(o, k).value_or("");
    });
    if (!ok) return false;
    const J lab = o.contains("metadata") ? o["metadata"].value("labels", obj()) : obj();
    return labels.matches([&](const std::string& k) -> std::optional<std::string> {
      if (lab.is_object() && lab.contains(k) && lab[k].is_string())
        return lab[k].get<std::string>();
      return std::nullopt;
    });
  }
  static bool watch_matches(const Watcher& w, const J& o) {
    return object_matches(w.ns, w.fields, w.labels, o);
  }

  // Stamps server fields and stores; publishes a watch event. Returns the stored object.
  Obj& commit(Collection& c, const std::string& key, J o, std::vector<Managed> managed,
              std::vector<Path> extra, const Obj* old, bool deleted = false) {
    (void)deleted;
    J& m = o["metadata"];
    m["resourceVersion"] = std::to_string(++rv);
    if (old) {
      m["uid"] = old->obj["metadata"]["uid"];
      m["creationTimestamp"] = old->obj["metadata"]["creationTimestamp"];
    } else {
      if (!m.contains("uid")) m["uid"] = new_uuid();
      m["creationTimestamp"] = rfc3339_now();
    }
    if (managed.empty())
      m.erase("managedFields");
    else
      m["managedFields"] = render_managed(managed);
    m = canonical_meta(m);
    if (!old && c.name != "events" && c.objs.size() >= kMaxObjects)
      throw std::runtime_error("too many " + c.name + " stored (limit " +
                               std::to_string(kMaxObjects) + ")");
    std::optional<J> prev;
    if (old) prev = old->obj;
    Obj& slot = c.objs[key];
    slot.obj = std::move(o);
    slot.managed = std::move(managed);
    slot.extra = std::move(extra);
    slot.rv = rv;
    record(c, old ? "MODIFIED" : "ADDED", key, slot.obj, std::move(prev));
    if (c.name == "events" && c.objs.size() > kMaxEventsStored) {
      // Bounded memory: forget the oldest event (no watch event, like a TTL expiry).
      auto oldest = c.objs.begin();
      for (auto it = c.objs.begin(); it != c.objs.end(); ++it)
        if (it->second.rv < oldest->second.rv) oldest = it;
      if (oldest->first != key) c.objs.erase(oldest);
    }
    return slot;
  }

  J remove(Collection& c, const std::string& key) {
    auto it = c.objs.find(key);
    J o = it->second.obj;
    J prev = o;
    o["metadata"]["resourceVersion"] = std::to_string(++rv);
    c.objs.erase(it);
    record(c, "DELETED", key, o, prev);
    return o;
  }

  bool sa_exists(const std::string& ns, const std::string& name) const {
    return name == "default" || name == "elector" || service_accounts.count({ns, name});
  }

  bool rbac_allows(const RequestInfo& info) const {
    auto has = [](const std::vector<std::string>& v, const std::string& x) {
      return std::find(v.begin(), v.end(), "*") != v.end() ||
             std::find(v.begin(), v.end(), x) != v.end();
    };
    std::string res = info.resource + (info.subresource.empty() ? "" : "/" + info.subresource);
    for (auto& b : bindings) {
      if (!b.ns.empty() && b.ns != info.ns) continue;
      bool subject = false;
      for (auto& [kind, name] : b.subjects) {
        if ((kind == "User" || kind == "ServiceAccount") && name == info.user) subject = true;
        if (kind == "Group" &&
            std::find(info.groups.begin(), info.groups.end(), name) != info.groups.end())
          subject = true;
      }
      if (!subject) continue;
      std::string rk = b.role_kind == "ClusterRole" ? "/" + b.role_name : b.ns + "/" + b.role_name;
      auto rit = roles.find(rk);
      if (rit == roles.end()) continue;
      for (auto& r : rit->second) {
        if (!has(r.verbs, info.verb) || !has(r.groups, info.group) || !has(r.resources, res))
          continue;
        if (!r.names.empty() && (info.name.empty() || std::find(r.names.begin(), r.names.end(),
                                                                info.name) == r.names.end()))
          continue;
        return true;
      }
    }
    return false;
  }
};

// ============================================================================================ misc
std::string HttpRequest::header(std::string_view name) const {
  for (auto& [k, v] : headers)
    if (k == name) return v;
  return "";
}

bool Selector::matches(
    const std::function<std::optional<std::string>(const std::string&)>& get) const {
  for (auto& t : terms) {
    auto v = get(t.key);
    bool set = !t.value.empty() && t.value[0] == '\x01';
    switch (t.op) {
      case Term::kEq:
        if (!v) return false;
        if (set ? !in_set(*v, t.value) : *v != t.value) return false;
        break;
      case Term::kNe:
        if (v && (set ? in_set(*v, t.value) : *v == t.value)) return false;
        break;
      case Term::kExists:
        if (!v) return false;
        break;
      case Term::kNotExists:
        if (v) return false;
        break;
    }
  }
  return true;
}

std::string dumps(const J& j) {
  return j.dump(-1, ' ', false, J::error_handler_t::replace);
}

std::string status_json(int code, const std::string& reason, const std::string& message,
                        const J* details) {
  J s = obj();
  s["kind"] = "Status";
  s["apiVersion"] = "v1";
  s["metadata"] = obj();
  s["status"] = "Failure";
  s["message"] = message;
  if (!reason.empty()) s["reason"] = reason;
  if (details) s["details"] = *details;
  s["code"] = code;
  return dumps(s) + "\n";
}

std::string url_decode(std::string_view s, bool plus_is_space) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::map<std::string, std::string> parse_query(std::string_view q) {
  std::map<std::string, std::string> out;
  size_t start = 0;
  while (start <= q.size()) {
    size_t amp = q.find('&', start);
    std::string_view part = q.substr(start, amp == std::string_view::npos ? q.npos : amp - start);
    if (!part.empty()) {
      size_t eq = part.find('=');
      std::string k = url_decode(part.substr(0, eq), true);
      std::string v = eq == std::string_view::npos ? "" : url_decode(part.substr(eq + 1), true);
      out.emplace(k, v);
    }
    if (amp == std::string_view::npos) break;
    start = amp + 1;
  }
  return out;
}

std::string rfc3339_now() {
  return format_rfc3339(unix_now_s());
}

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// ============================================================================================ Api
Api::Api() : store_(std::make_unique<Store>()) {}
Api::~Api() = default;

void Api::set_watch_history(size_t n) {
  store_->history_cap = std::max<size_t>(n, 1);
}

void Api::add_deny(const std::string& spec) {
  auto a = spec.rfind(':');
  if (a == std::string::npos) return;
  auto b = spec.rfind(':', a - 1);
  if (b == std::string::npos) return;
  store_->deny.push_back({spec.substr(0, b), spec.substr(b + 1, a - b - 1), spec.substr(a + 1)});
}

uint64_t Api::current_rv() const {
  return store_->rv;
}

size_t Api::watcher_count() const {
  size_t n = 0;
  for (auto* c : {&store_->leases, &store_->events, &store_->pods})
    for (auto& w : c->watchers)
      if (!w.expired()) ++n;
  return n;
}

void Api::add_token(const std::string& token, const TokenEntry& e) {
  tokens_[token] = e;
}

static std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (char c : line) {
    if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  for (auto& s : out) {
    size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
    s = a == std::string::npos ? "" : s.substr(a, b - a + 1);
  }
  return out;
}

bool Api::load_tokens(const std::string& file, std::string& err) {
  token_file_ = file;
  std::ifstream in(file);
  if (!in) {
    err = "cannot read token file " + file;
    return false;
  }
  std::map<std::string, TokenEntry> fresh;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto f = split_csv(line);
    if (f.size() < 2 || f[0].empty() || f[1].empty()) continue;
    TokenEntry e;
    e.user = f[1];
    for (size_t i = 2; i < f.size(); ++i) {
      std::stringstream gs(f[i]);
      std::string g;
      while (std::getline(gs, g, ','))
        if (!g.empty()) e.groups.push_back(g);
    }
    e.admin = e.user == "admin" ||
              std::find(e.groups.begin(), e.groups.end(), "system:masters") != e.groups.end();
    fresh[f[0]] = e;
  }
  // Tokens that disappeared keep working for the grace window (like the real 10 s token cache).
  int64_t until = now_ms() + int64_t{token_grace_s_} * 1000;
  if (token_grace_s_ > 0)
    for (auto& [t, e] : tokens_)
      if (!fresh.count(t)) expiring_[t] = {e, until};
  for (auto& [t, e] : fresh)
    expiring_.erase(t);
  tokens_ = std::move(fresh);
  struct stat st {};
  if (::stat(file.c_str(), &st) == 0) {
    token_mtime_ns_ = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
    token_size_ = st.st_size;
  }
  return true;
}

bool Api::maybe_reload_tokens(bool force) {
  if (token_file_.empty()) return false;
  struct stat st {};
  if (::stat(token_file_.c_str(), &st) != 0) return false;
  int64_t m = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
  if (!force && m == token_mtime_ns_ && st.st_size == token_size_) return false;
  std::string err;
  return load_tokens(token_file_, err);
}

static std::vector<std::string> yaml_strings(const YAML::Node& n) {
  std::vector<std::string> out;
  if (n && n.IsSequence())
    for (auto it = n.begin(); it != n.end(); ++it)
      out.push_back(it->as<std::string>(""));
  return out;
}

bool Api::load_rbac(const std::string& file, std::string& err) {
  try {
    for (auto& doc : YAML::LoadAllFromFile(file)) {
      if (!doc.IsMap()) continue;
      std::string kind = doc["kind"].as<std::string>("");
      std::string name = doc["metadata"]["name"].as<std::string>("");
      std::string ns = doc["metadata"]["namespace"].as<std::string>("default");
      if (kind == "ServiceAccount") {
        store_->service_accounts.insert({ns, name});
      } else if (kind == "Role" || kind == "ClusterRole") {
        std::vector<Rule> rules;
        if (doc["rules"] && doc["rules"].IsSequence())
          for (auto it = doc["rules"].begin(); it != doc["rules"].end(); ++it) {
            Rule r;
            r.verbs = yaml_strings((*it)["verbs"]);
            r.groups = yaml_strings((*it)["apiGroups"]);
            r.resources = yaml_strings((*it)["resources"]);
            r.names = yaml_strings((*it)["resourceNames"]);
            rules.push_back(r);
          }
        store_->roles[(kind == "Role" ? ns : "") + "/" + name] = rules;
      } else if (kind == "RoleBinding" || kind == "ClusterRoleBinding") {
        Binding b;
        b.ns = kind == "RoleBinding" ? ns : "";
        b.role_kind = doc["roleRef"]["kind"].as<std::string>("Role");
        b.role_name = doc["roleRef"]["name"].as<std::string>("");
        if (doc["subjects"] && doc["subjects"].IsSequence())
          for (auto it = doc["subjects"].begin(); it != doc["subjects"].end(); ++it) {
            std::string sk = (*it)["kind"].as<std::string>("");
            std::string sn = (*it)["name"].as<std::string>("");
            if (sk == "ServiceAccount")
              sn = "system:serviceaccount:" + (*it)["namespace"].as<std::string>(ns) + ":" + sn;
            b.subjects.push_back({sk, sn});
          }
        store_->bindings.push_back(b);
      }
    }
  } catch (const std::exception& e) {
    err = file + ": " + e.what();
    return false;
  }
  return true;
}

static J seed_pod(J pod, const std::string& ns_default) {
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

bool Api::load_pods(const std::string& file, std::string& err) {
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
    store_->commit(store_->pods, ns + "/" + name, pod, {}, {}, nullptr);
  }
  return true;
}

bool Api::add_pod_spec(const std::string& spec, std::string& err) {
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
  store_->commit(store_->pods, ns + "/" + rest, pod, {}, {}, nullptr);
  return true;
}

// ------------------------------------------------------------------------------------ classify
RequestInfo Api::classify(const HttpRequest& req) const {
  RequestInfo info;
  std::string target = req.target;
  auto qpos = target.find('?');
  info.path = target.substr(0, qpos);
  if (qpos != std::string::npos)
    info.query = parse_query(std::string_view(target).substr(qpos + 1));

  // authentication
  std::string auth = req.header("authorization");
  std::string lower = auth.substr(0, 7);
  for (auto& c : lower)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "bearer ") {
    std::string token = auth.substr(7);
    size_t a = token.find_first_not_of(' '), b = token.find_last_not_of(' ');
    token = a == std::string::npos ? "" : token.substr(a, b - a + 1);
    const TokenEntry* e = nullptr;
    if (auto it = tokens_.find(token); it != tokens_.end() && !token.empty()) e = &it->second;
    if (!e)
      if (auto it = expiring_.find(token); it != expiring_.end() && it->second.second > now_ms())
        e = &it->second.first;
    if (!e) {
      info.bad_token = true;
    } else {
      info.user = e->user;
      info.groups = e->groups;
      info.admin = e->admin;
      info.groups.push_back("system:authenticated");
      const std::string sa = "system:serviceaccount:";
      if (info.user.rfind(sa, 0) == 0) {
        std::string rest = info.user.substr(sa.size());
        info.groups.push_back("system:serviceaccounts");
        info.groups.push_back("system:serviceaccounts:" + rest.substr(0, rest.find(':')));
      }
    }
  } else {
    info.user = "system:anonymous";
    info.groups = {"system:unauthenticated"};
  }

  // request info
  std::vector<std::string> seg;
  {
    std::stringstream ss(info.path);
    std::string s;
    while (std::getline(ss, s, '/'))
      if (!s.empty()) seg.push_back(url_decode(s, false));
  }
  size_t i = 0;
  if (seg.size() >= 2 && seg[0] == "api") {
    info.version = seg[1];
    i = 2;
  } else if (seg.size() >= 3 && seg[0] == "apis") {
    info.group = seg[1];
    info.version = seg[2];
    i = 3;
  } else {
    return info;
  }
  if (i >= seg.size()) return info;
  info.resource_request = true;
  bool watch_prefix = false;
  if (seg[i] == "watch") {
    watch_prefix = true;
    ++i;
  }
  if (i < seg.size() && seg[i] == "namespaces" && i + 1 < seg.size() && i + 2 < seg.size()) {
    info.ns = seg[i + 1];
    i += 2;
  }
  if (i < seg.size()) info.resource = seg[i++];
  if (i < seg.size()) info.name = seg[i++];
  if (i < seg.size()) info.subresource = seg[i++];
  if (info.resource == "namespaces" && info.ns.empty() && !info.name.empty()) info.ns = info.name;

  const std::string& m = req.method;
  auto q = [&](const char* k) {
    auto it = info.query.find(k);
    return it == info.query.end() ? std::string() : it->second;
  };
  std::string w = q("watch");
  bool watch = watch_prefix || w == "true" || w == "1";
  if (m == "GET" || m == "HEAD") {
    info.verb = info.name.empty() ? (watch ? "watch" : "list") : (watch ? "watch" : "get");
  } else if (m == "POST") {
    info.verb = "create";
  } else if (m == "PUT") {
    info.verb = "update";
  } else if (m == "PATCH") {
    info.verb = "patch";
  } else if (m == "DELETE") {
    info.verb = info.name.empty() ? "deletecollection" : "delete";
  } else {
    info.verb = m;
  }
  if ((info.verb == "list" || info.verb == "watch") && info.name.empty()) {
    Selector fs;
    std::string err;
    if (parse_selector(q("fieldSelector"), false, fs, err))
      for (auto& t : fs.terms)
        if (t.key == "metadata.name" && t.op == Selector::Term::kEq && fs.terms.size() >= 1) {
          bool only_eq = true;
          for (auto& t2 : fs.terms)
            if (t2.key == "metadata.name" && (t2.op != Selector::Term::kEq || t2.value != t.value))
              only_eq = false;
          if (only_eq && t.value.find('/') == std::string::npos) info.name = t.value;
        }
  }
  return info;
}

// ------------------------------------------------------------------------------------ handlers
namespace {

struct Ctx {
  const HttpRequest& req;
  const RequestInfo& info;
  const ResDef& rd;
  Store& st;
  std::string manager;
  std::string q(const char* k) const {
    auto it = info.query.find(k);
    return it == info.query.end() ? std::string() : it->second;
  }
};

std::string manager_of(const HttpRequest& req, const RequestInfo& info) {
  auto it = info.query.find("fieldManager");
  if (it != info.query.end() && !it->second.empty()) return it->second;
  std::string ua = req.header("user-agent");
  std::string m = ua.substr(0, ua.find('/'));
  if (m.size() > 128) m.resize(128);
  return m.empty() ? "unknown" : m;
}

// Decodes metadata with Go's type rules. Returns "" or the error text.
std::string decode_meta(const J& in, const std::string& kind, J& out) {
  out = obj();
  if (in.is_null()) return "";
  if (!in.is_object()) return unmarshal_err(in, kind + ".metadata", "v1.ObjectMeta");
  for (const char* k : {"name", "generateName", "namespace", "uid", "resourceVersion"}) {
    if (!in.contains(k) || in[k].is_null()) continue;
    if (!in[k].is_string())
      return unmarshal_err(in[k], std::string("ObjectMeta.metadata.") + k, "string");
    if (!in[k].get<std::string>().empty()) out[k] = in[k];
  }
  for (const char* k : {"labels", "annotations"}) {
    if (!in.contains(k) || in[k].is_null()) continue;
    if (!in[k].is_object())
      return unmarshal_err(in[k], std::string("ObjectMeta.metadata.") + k, "map[string]string");
    J m = obj();
    for (auto& [lk, lv] : in[k].items()) {
      if (lv.is_null()) {
        m[lk] = "";
        continue;
      }
      if (!lv.is_string())
        return unmarshal_err(lv, std::string("ObjectMeta.metadata.") + k, "string");
      m[lk] = lv;
    }
    if (!m.empty()) out[k] = m;
  }
  if (in.contains("ownerReferences") && in["ownerReferences"].is_array() &&
      !in["ownerReferences"].empty())
    out["ownerReferences"] = in["ownerReferences"];
  if (in.contains("finalizers") && in["finalizers"].is_array() && !in["finalizers"].empty())
    out["finalizers"] = in["finalizers"];
  return "";
}

std::string decode_int32(const J& v, const std::string& field, J& out) {
  if (v.is_null()) return "";
  if (!v.is_number_integer()) return unmarshal_err(v, field, "int32");
  int64_t x = v.is_number_unsigned()
                  ? (v.get<uint64_t>() > INT32_MAX ? int64_t{INT32_MAX} + 1 : v.get<int64_t>())
                  : v.get<int64_t>();
  if (x > INT32_MAX || x < INT32_MIN) return unmarshal_err(v, field, "int32");
  out = x;
  return "";
}

std::string decode_micro(const J& v, J& out) {
  if (v.is_null()) return "";
  if (!v.is_string())
    return "json: cannot unmarshal " + std::string(go_json_type(v)) +
           " into Go value of type string";
  GoTime t = go_parse_time(v.get<std::string>(), true);
  if (!t.ok) return t.err;
  out = format_micro(t.unix_s, t.nanos);
  return "";
}

std::string decode_time(const J& v, J& out) {
  if (v.is_null()) return "";
  if (!v.is_string())
    return "json: cannot unmarshal " + std::string(go_json_type(v)) +
           " into Go value of type string";
  if (v.get<std::string>().empty()) return "";
  GoTime t = go_parse_time(v.get<std::string>(), false);
  if (!t.ok) return t.err;
  out = format_rfc3339(t.unix_s);
  return "";
}

// Reads and parses the body as an object of `kind`. On failure fills `err`.
bool read_object(const Ctx& c, const std::string& kind, bool is_patch_result, J& out,
                 HttpResponse& err) {
  if (!is_patch_result) {
    std::string mt = media_type(c.req.header("content-type"));
    bool yaml = mt == "application/yaml";
    if (!(mt.empty() || mt == "application/json" || yaml)) {
      err = unsupported_put();
      return false;
    }
    std::string perr;
    if (!parse_json_body(c.req.body, yaml, out, perr)) {
      std::string summary = c.req.body.size() > 30 ? c.req.body.substr(0, 30) + " ..." : c.req.body;
      err = bad_request("the object provided is unrecognized (must be of type " + kind +
                        "): couldn't get version/kind; json parse error: " + perr + " (" + summary +
                        ")");
      return false;
    }
  }
  if (!out.is_object()) {
    std::string summary = c.req.body.size() > 30 ? c.req.body.substr(0, 30) + " ..." : c.req.body;
    err = bad_request("the object provided is unrecognized (must be of type " + kind +
                      "): couldn't get version/kind; json parse error: json: cannot unmarshal " +
                      go_json_type(out) +
                      " into Go value of type struct { APIVersion string "
                      "\"json:\\\"apiVersion,omitempty\\\"\"; Kind string "
                      "\"json:\\\"kind,omitempty\\\"\" } (" +
                      summary + ")");
    return false;
  }
  return true;
}

HttpResponse cannot_handle(const Ctx& c, const J& body, const std::string& kind,
                           const std::string& err) {
  std::string bk =
      body.contains("kind") && body["kind"].is_string() && !body["kind"].get<std::string>().empty()
          ? body["kind"].get<std::string>()
          : kind;
  std::string av = body.contains("apiVersion") && body["apiVersion"].is_string() &&
                           !body["apiVersion"].get<std::string>().empty()
                       ? body["apiVersion"].get<std::string>()
                       : c.rd.api_version();
  std::string ver = av.substr(av.find('/') == std::string::npos ? 0 : av.find('/') + 1);
  return bad_request(bk + " in version " + go_quote(ver) + " cannot be handled as a " + kind +
                     ": " + err);
}

// Checks kind/apiVersion of a body against the endpoint.
std::optional<HttpResponse> check_gvk(const Ctx& c, const J& body, const std::string& kind) {
  for (const char* k : {"kind", "apiVersion"})
    if (body.contains(k) && !body[k].is_null() && !body[k].is_string())
      return cannot_handle(c, J(), kind,
                           unmarshal_err(body[k], std::string("TypeMeta.") + k, "string"));
  std::string bk = body.value("kind", std::string());
  std::string av = body.value("apiVersion", std::string());
  if ((!bk.empty() && bk != kind) || (!av.empty() && av != c.rd.api_version())) {
    if (!bk.empty() && bk != kind)
      return bad_request("the object provided is unrecognized (must be of type " + kind +
                         "): no kind \"" + bk + "\" is registered for version \"" +
                         (av.empty() ? c.rd.api_version() : av) + "\"");
    return bad_request("the API version in the data (" + av +
                       ") does not match the expected API version (" + c.rd.api_version() + ")");
  }
  return std::nullopt;
}

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

// Fills namespace / generated name; checks the body namespace against the URL.
std::optional<HttpResponse> settle_name_ns(const Ctx& c, J& meta) {
  std::string bns = meta.value("namespace", std::string());
  if (!bns.empty() && bns != c.info.ns)
    return bad_request(
        "the namespace of the provided object does not match the namespace sent on the request");
  meta["namespace"] = c.info.ns;
  if (meta.value("name", std::string()).empty() &&
      !meta.value("generateName", std::string()).empty())
    meta["name"] = meta["generateName"].get<std::string>() + random_suffix(5);
  return std::nullopt;
}

J reorder_meta_first(const J& o) {
  J out = obj();
  out["metadata"] = o.value("metadata", obj());
  for (auto& [k, v] : o.items())
    if (k != "metadata") out[k] = v;
  return out;
}

}  // namespace

// The class is a friend-less helper: handlers live in a local struct to reach Store.
namespace {

struct Handlers {
  Store& st;

  // --------------------------------------------------------------------------- generic read
  HttpResponse serve_object(const Ctx& c, const Collection& col, const J& o, int code) {
    AcceptInfo acc = parse_accept(c.req.header("accept"));
    if (!acc.table_version.empty())
      return table_response(c, col, {&o}, meta_str(o, "resourceVersion"), acc);
    return json_resp(code, st.versioned(col.name, o, c.rd.api_version(), true));
  }

  HttpResponse table_response(const Ctx& c, const Collection& col,
                              const std::vector<const J*>& items, const std::string& rv,
                              const AcceptInfo& acc, const std::string& cont = "") {
    J t = obj();
    t["kind"] = "Table";
    t["apiVersion"] = "meta.k8s.io/" + acc.table_version;
    J md = J{{"resourceVersion", rv}};
    if (!cont.empty()) md["continue"] = cont;
    t["metadata"] = md;
    t["columnDefinitions"] = table_columns(col.name);
    J rows = J::array();
    std::string include = c.q("includeObject");
    for (auto* o : items) {
      J row = obj();
      row["cells"] = table_cells(col.name, *o);
      if (include == "Object") {
        row["object"] = st.versioned(col.name, *o, c.rd.api_version(), true);
      } else if (include != "None") {
        row["object"] = J{{"kind", "PartialObjectMetadata"},
                          {"apiVersion", "meta.k8s.io/" + acc.table_version},
                          {"metadata", o->value("metadata", obj())}};
      }
      rows.push_back(row);
    }
    t["rows"] = rows;
    return json_resp(200, t);
  }

  bool parse_selectors(const Ctx& c, Selector& fs, Selector& ls, HttpResponse& err) {
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

  HttpResponse get(const Ctx& c) {
    Collection& col = st.coll(c.rd.collection);
    auto it = col.objs.find(c.info.ns + "/" + c.info.name);
    if (it == col.objs.end()) return not_found(c.rd, c.info.name);
    return serve_object(c, col, it->second.obj, 200);
  }

  // State of the collection at resource version `rv` (from the history window).
  std::map<std::string, J> state_at(const Collection& col, uint64_t rv) {
    std::map<std::string, J> s;
    for (auto& [k, o] : col.objs)
      s[k] = o.obj;
    for (auto it = col.history.rbegin(); it != col.history.rend() && it->rv > rv; ++it) {
      if (it->type == "ADDED")
        s.erase(it->key);
      else if (it->prev)
        s[it->key] = *it->prev;
    }
    return s;
  }

  HttpResponse list(const Ctx& c) {
    Collection& col = st.coll(c.rd.collection);
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
    std::string list_rv = std::to_string(st.rv);
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
      if (want > st.rv)
        return status_resp(
            504, "Timeout",
            "Timeout: Too large resource version: " + rvs + ", current: " + std::to_string(st.rv));
      snapshot = state_at(col, want);
      use_snapshot = true;
      list_rv = rvs;
    }
    std::vector<const J*> items;
    if (use_snapshot) {
      for (auto& [k, o] : snapshot)
        if (Store::object_matches(c.info.ns, fs, ls, o)) items.push_back(&o);
    } else {
      for (auto& [k, o] : col.objs)
        if (Store::object_matches(c.info.ns, fs, ls, o.obj)) items.push_back(&o.obj);
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
      std::string key =
          meta_str(*items.back(), "namespace") + "/" + meta_str(*items.back(), "name");
      static const char* hex = "0123456789abcdef";
      for (unsigned char ch : key) {
        cont_out += hex[ch >> 4];
        cont_out += hex[ch & 15];
      }
    }
    if (!acc.table_version.empty()) return table_response(c, col, items, list_rv, acc, cont_out);
    J l = obj();
    l["kind"] = st.kind_of(col.name) + "List";
    l["apiVersion"] = c.rd.api_version();
    J md = J{{"resourceVersion", list_rv}};
    if (!cont_out.empty()) {
      md["continue"] = cont_out;
      md["remainingItemCount"] = remaining;
    }
    l["metadata"] = md;
    J arr = J::array();
    for (auto* o : items)
      arr.push_back(st.versioned(col.name, *o, c.rd.api_version(), false));
    l["items"] = arr;
    return json_resp(200, l);
  }

  Result watch(const Ctx& c) {
    Result r;
    Collection& col = st.coll(c.rd.collection);
    Selector fs, ls;
    if (!parse_selectors(c, fs, ls, r.response)) return r;
    auto w = std::make_shared<Watcher>();
    w->collection = col.name;
    w->ns = c.info.ns;
    w->fields = fs;
    w->labels = ls;
    w->api_version = c.rd.api_version();
    w->client = c.info.user;
    if (!c.info.name.empty() && fs.terms.empty()) {
      Selector::Term t;
      t.key = "metadata.name";
      t.value = c.info.name;
      w->fields.terms.push_back(t);
    }
    WatchStart ws;
    std::string rvs = c.q("resourceVersion");
    try {
      ws.timeout_seconds = c.q("timeoutSeconds").empty() ? 0 : std::stoi(c.q("timeoutSeconds"));
    } catch (...) {
      ws.timeout_seconds = 0;
    }
    if (ws.timeout_seconds <= 0) {
      static std::mt19937 rng{std::random_device{}()};
      ws.timeout_seconds = 1800 + static_cast<int>(rng() % 1800);
    }
    std::string b = c.q("allowWatchBookmarks");
    ws.bookmarks = b == "true" || b == "1";
    if (rvs.empty() || rvs == "0") {
      for (auto& [k, o] : col.objs)
        if (Store::watch_matches(*w, o.obj))
          ws.initial += st.event_line("ADDED", st.versioned(col.name, o.obj, w->api_version, true));
      w->start_rv = w->bookmark_rv = col.last_rv;
      // v1.37 ends the initial ADDEDs with a bookmark (in the same chunk) also for watches that
      // did not ask for sendInitialEvents.
      if (ws.bookmarks) ws.initial += st.bookmark_event(*w, col.last_rv, true);
    } else {
      uint64_t from = 0;
      try {
        size_t pos = 0;
        from = std::stoull(rvs, &pos);
        if (pos != rvs.size()) throw std::invalid_argument("rv");
      } catch (...) {
        r.response = bad_request("invalid resource version: " + rvs);
        return r;
      }
      if (from < col.start_rv) {
        J s = J{{"kind", "Status"},
                {"apiVersion", "v1"},
                {"metadata", obj()},
                {"status", "Failure"},
                {"message",
                 "too old resource version: " + rvs + " (" + std::to_string(col.start_rv) + ")"},
                {"reason", "Expired"},
                {"code", 410}};
        ws.initial = st.event_line("ERROR", s);
        r.watch = ws;
        return r;
      }
      for (auto& ev : col.history)
        if (ev.rv > from && Store::watch_matches(*w, ev.obj))
          ws.initial +=
              st.event_line(ev.type, st.versioned(col.name, ev.obj, w->api_version, true));
      w->start_rv = std::max(from, col.last_rv);
      w->bookmark_rv = from;  // changes replayed above make a bookmark due, like the real cache
    }
    col.watchers.erase(std::remove_if(col.watchers.begin(), col.watchers.end(),
                                      [](const std::weak_ptr<Watcher>& x) { return x.expired(); }),
                       col.watchers.end());
    col.watchers.push_back(w);
    ws.watcher = w;
    r.watch = ws;
    return r;
  }

  HttpResponse del(const Ctx& c) {
    Collection& col = st.coll(c.rd.collection);
    std::string key = c.info.ns + "/" + c.info.name;
    auto it = col.objs.find(key);
    if (it == col.objs.end()) return not_found(c.rd, c.info.name);
    if (!c.req.body.empty() && json_depth(c.req.body) < kMaxDepth) {
      J opts = J::parse(c.req.body, nullptr, false);
      if (opts.is_object() && opts.contains("preconditions") && opts["preconditions"].is_object()) {
        const J& p = opts["preconditions"];
        const J& m = it->second.obj["metadata"];
        if (p.contains("uid") && p["uid"].is_string() && p["uid"] != m["uid"])
          return conflict(
              c.rd, c.info.name,
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
    J gone = st.remove(col, key);
    if (col.name == "pods") return json_resp(200, st.versioned(col.name, gone, "v1", true));
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

  // --------------------------------------------------------------------------- leases
  HttpResponse lease_write(const Ctx& c, const J& body, bool create_only, bool from_patch) {
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

  HttpResponse store_lease(const Ctx& c, J& lease, bool create_only, bool from_patch) {
    J& meta = lease["metadata"];
    if (auto e = settle_name_ns(c, meta)) return *e;
    Collection& col = st.leases;
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
      if (create_only && meta.contains("resourceVersion"))
        return status_resp(500, "", "resourceVersion should not be set on objects to be created");
      if (it != col.objs.end()) return already_exists(c.rd, name);
      meta.erase("resourceVersion");
      meta.erase("uid");
      std::vector<Managed> managed;
      apply_ownership(managed, {}, lease_leaves(lease), c.manager, c.rd.api_version());
      Obj& o = st.commit(col, key, lease, managed, {}, nullptr);
      return json_resp(201, with_kind(o.obj, "Lease", c.rd.api_version()));
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
      return conflict(
          c.rd, name,
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
    Obj& o = st.commit(col, key, lease, managed, {}, &old);
    return json_resp(200, with_kind(o.obj, "Lease", c.rd.api_version()));
  }

  // Applies a PATCH body to `current` (with kind/apiVersion). Returns nullopt on success.
  std::optional<HttpResponse> apply_patch(const Ctx& c, const J& current, J& result) {
    std::string mt = media_type(c.req.header("content-type"));
    if (mt != "application/merge-patch+json" && mt != "application/strategic-merge-patch+json" &&
        mt != "application/json-patch+json")
      return unsupported_patch();
    if (json_depth(c.req.body) > kMaxDepth) return bad_request("invalid JSON patch");
    J patch = J::parse(c.req.body, nullptr, false);
    if (patch.is_discarded()) return bad_request("invalid JSON patch");
    try {
      if (mt == "application/json-patch+json") {
        if (!patch.is_array())
          return bad_request("error decoding patch: json: cannot unmarshal " +
                             std::string(go_json_type(patch)) +
                             " into Go value of type []handlers.jsonPatchOp");
        result = current.patch(patch);
      } else {
        if (!patch.is_object())
          return bad_request("error decoding patch: json: cannot unmarshal " +
                             std::string(go_json_type(patch)) +
                             " into Go value of type map[string]interface {}");
        result = current;
        strategic_strip(patch);
        result.merge_patch(patch);
      }
    } catch (const std::exception&) {
      J d = obj();  // v1.37 names no cause (a failed op, a missing path alike)
      return status_resp(422, "Invalid",
                         "the server rejected our request due to an error in our request", &d);
    }
    return std::nullopt;
  }

  static void strategic_strip(J& p) {
    if (p.is_object()) {
      for (auto it = p.begin(); it != p.end();) {
        if (!it.key().empty() && it.key()[0] == '$') {
          it = p.erase(it);
        } else {
          strategic_strip(*it);
          ++it;
        }
      }
    }
  }

  HttpResponse lease_patch(const Ctx& c) {
    auto it = st.leases.objs.find(c.info.ns + "/" + c.info.name);
    std::string mt = media_type(c.req.header("content-type"));
    if (mt != "application/merge-patch+json" && mt != "application/strategic-merge-patch+json" &&
        mt != "application/json-patch+json")
      return unsupported_patch();
    if (it == st.leases.objs.end()) return not_found(c.rd, c.info.name);
    J result;
    if (auto e = apply_patch(c, with_kind(it->second.obj, "Lease", c.rd.api_version()), result))
      return *e;
    if (!result.is_object()) return bad_request("invalid JSON patch");
    return lease_write(c, result, false, true);
  }

  // --------------------------------------------------------------------------- events
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
        errs.push_back(
            {FieldError::kInvalid, "message", "\"\"", "can have at most 1024 characters"});
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
      errs.push_back(
          {FieldError::kInvalid, "deprecatedFirstTimestamp", "\"\"", "needs to be unset"});
    if (!ev["lastTimestamp"].is_null())
      errs.push_back(
          {FieldError::kInvalid, "deprecatedLastTimestamp", "\"\"", "needs to be unset"});
    if (ev.contains("count"))
      errs.push_back({FieldError::kInvalid, "deprecatedCount", "\"\"", "needs to be unset"});
    if (!ev["source"].empty())
      errs.push_back({FieldError::kInvalid, "deprecatedSource", "\"\"", "needs to be unset"});
    return errs;
  }

  HttpResponse event_write(const Ctx& c, const J& body, bool create, const Obj* old_obj) {
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
    Collection& col = st.events;
    std::string key = c.info.ns + "/" + name;
    auto it = col.objs.find(key);
    const J versioned_new = v1 ? core_to_v1_event(ev) : ev;
    if (create || it == col.objs.end()) {
      if (create && meta.contains("resourceVersion"))
        return status_resp(500, "", "resourceVersion should not be set on objects to be created");
      if (it != col.objs.end()) return already_exists(c.rd, name);
      meta.erase("resourceVersion");
      meta.erase("uid");
      std::vector<Managed> managed;
      apply_ownership(managed, {}, event_leaves(versioned_new), c.manager, c.rd.api_version());
      Obj& o = st.commit(col, key, reorder_meta_first(ev), managed, {}, nullptr);
      return json_resp(201, st.versioned("events", o.obj, c.rd.api_version(), true));
    }
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
    Obj& o = st.commit(col, key, reorder_meta_first(ev), managed, {}, &old);
    return json_resp(200, st.versioned("events", o.obj, c.rd.api_version(), true));
  }

  HttpResponse event_patch(const Ctx& c) {
    std::string mt = media_type(c.req.header("content-type"));
    if (mt != "application/merge-patch+json" && mt != "application/strategic-merge-patch+json" &&
        mt != "application/json-patch+json")
      return unsupported_patch();
    auto it = st.events.objs.find(c.info.ns + "/" + c.info.name);
    if (it == st.events.objs.end()) return not_found(c.rd, c.info.name);
    J result;
    if (auto e = apply_patch(c, st.versioned("events", it->second.obj, c.rd.api_version(), true),
                             result))
      return *e;
    if (!result.is_object()) return bad_request("invalid JSON patch");
    return event_write(c, result, false, &it->second);
  }

  // --------------------------------------------------------------------------- pods
  HttpResponse pod_create(const Ctx& c, const J& body) {
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
    if (!st.sa_exists(c.info.ns, sa)) {
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
    if (st.pods.objs.count(key)) return already_exists(c.rd, name);
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
    Obj& o = st.commit(st.pods, key, pod, managed, extra, nullptr);
    return json_resp(201, with_kind(o.obj, "Pod", "v1"));
  }

  HttpResponse pod_patch(const Ctx& c) {
    std::string mt = media_type(c.req.header("content-type"));
    if (mt != "application/merge-patch+json" && mt != "application/strategic-merge-patch+json" &&
        mt != "application/json-patch+json")
      return unsupported_patch();
    std::string key = c.info.ns + "/" + c.info.name;
    auto it = st.pods.objs.find(key);
    if (it == st.pods.objs.end()) return not_found(c.rd, c.info.name);
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
    Obj& o = st.commit(st.pods, key, pod, managed, old.extra, &old);
    return json_resp(200, with_kind(o.obj, "Pod", "v1"));
  }
};

// ------------------------------------------------------------------------------------ discovery
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

}  // namespace

// ------------------------------------------------------------------------------------ dispatch
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
    static const ResDef kNs{"", "v1", "namespaces", "Namespace", "namespaces"};
    RequestInfo ri = info;
    if (ri.verb == "list") ri.ns.clear();
    if (!ri.admin && !store_->rbac_allows(ri)) {
      J d = name_details(kNs, ri.name);
      res.response = status_resp(
          403, "Forbidden",
          (ri.name.empty() ? std::string("namespaces") : "namespaces \"" + ri.name + "\"") +
              " is forbidden: User \"" + ri.user + "\" cannot " + ri.verb +
              " resource \"namespaces\" in API group \"\"" +
              (ri.name.empty() ? std::string(" at the cluster scope")
                               : " in the namespace \"" + ri.name + "\""),
          &d);
      return res;
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
      res.response = json_resp(200, with_kind(ns_obj(ri.name), "Namespace", "v1"));
    } else {
      // Every namespace exists; list the ones that hold objects, plus default.
      std::set<std::string> names{"default"};
      for (auto* c : {&store_->leases, &store_->events, &store_->pods})
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
        res.response =
            json_resp(200, J{{"kind", "Table"},
                             {"apiVersion", "meta.k8s.io/" + acc.table_version},
                             {"metadata", J{{"resourceVersion", std::to_string(store_->rv)}}},
                             {"columnDefinitions", cols},
                             {"rows", rows}});
        return res;
      }
      res.response =
          json_resp(200, J{{"kind", "NamespaceList"},
                           {"apiVersion", "v1"},
                           {"metadata", J{{"resourceVersion", std::to_string(store_->rv)}}},
                           {"items", items}});
    }
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
  bool denied = false;
  for (auto& d : store_->deny)
    if ((d[0] == "*" || d[0] == info.user) && (d[1] == "*" || d[1] == info.verb) &&
        (d[2] == "*" || d[2] == info.resource))
      denied = true;
  if (denied || (!info.admin && !store_->rbac_allows(info))) {
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
  Ctx c{req, info, *rd, *store_, manager_of(req, info)};
  Handlers h{*store_};
  const std::string& v = info.verb;
  bool named = !info.name.empty() && v != "list" && v != "watch";
  if (info.ns.empty() && v != "list" && v != "watch") {
    res.response = method_not_allowed(req.method);
    return res;
  }
  if (v == "get" && named) {
    res.response = h.get(c);
  } else if (v == "list") {
    res.response = h.list(c);
  } else if (v == "watch") {
    return h.watch(c);
  } else if (v == "delete" && named) {
    res.response = h.del(c);
  } else if (v == "create" || v == "update") {
    J body;
    HttpResponse err;
    if (!read_object(c, rd->kind, false, body, err)) {
      res.response = err;
      return res;
    }
    if (rd->collection == "leases") {
      res.response = h.lease_write(c, body, v == "create", false);
    } else if (rd->collection == "events") {
      res.response = h.event_write(c, body, v == "create", nullptr);
    } else if (v == "create") {
      res.response = h.pod_create(c, body);
    } else {
      res.response = method_not_allowed(req.method);
    }
  } else if (v == "patch" && named) {
    if (rd->collection == "leases")
      res.response = h.lease_patch(c);
    else if (rd->collection == "events")
      res.response = h.event_patch(c);
    else
      res.response = h.pod_patch(c);
  } else {
    res.response = method_not_allowed(req.method);
  }
  return res;
}

std::string Api::bookmark_line(Watcher& w) const {
  const Collection& col = store_->coll(w.collection);
  if (col.last_rv <= w.bookmark_rv) return "";
  w.bookmark_rv = col.last_rv;
  return store_->bookmark_event(w, col.last_rv, false);
}

std::optional<J> Api::raw_get(const std::string& collection, const std::string& ns,
                              const std::string& name) const {
  const Collection& col = store_->coll(collection);
  auto it = col.objs.find(ns + "/" + name);
  if (it == col.objs.end()) return std::nullopt;
  return store_->versioned(collection, it->second.obj,
                           collection == "leases" ? "coordination.k8s.io/v1" : "v1", true);
}

J Api::raw_put_lease(const std::string& ns, const std::string& name, const J& body) {
  Collection& col = store_->leases;
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
    return with_kind(store_->commit(col, key, lease, managed, {}, nullptr).obj, "Lease",
                     "coordination.k8s.io/v1");
  }
  managed = it->second.managed;
  apply_ownership(managed, lease_leaves(it->second.obj), lease_leaves(lease),
                  "leasehold-test-apiserver", "coordination.k8s.io/v1");
  Obj old = it->second;
  return with_kind(store_->commit(col, key, lease, managed, {}, &old).obj, "Lease",
                   "coordination.k8s.io/v1");
}

bool Api::raw_delete(const std::string& collection, const std::string& ns,
                     const std::string& name) {
  Collection& col = store_->coll(collection);
  std::string key = ns + "/" + name;
  if (!col.objs.count(key)) return false;
  store_->remove(col, key);
  return true;
}

}  // namespace apiserver
