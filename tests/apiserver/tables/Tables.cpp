// Table columns, cells and answers (see Tables.h).
#include "tables/Tables.h"

#include <cctype>
#include <cstdint>

#include "gocompat/GoTime.h"
#include "gocompat/HumanDuration.h"
#include "http/StatusResponses.h"
#include "json/KubeObject.h"

namespace apiserver {

const char* const kNameDesc =
    "Name must be unique within a namespace. Is required when creating resources, although some "
    "resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const char* const kAgeDesc =
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

HttpResponse table_response(const HandlerContext& c, const Collection& col,
                            const std::vector<const J*>& items, const std::string& rv,
                            const AcceptInfo& acc, const std::string& cont) {
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
      row["object"] = versioned(col.name, *o, c.rd.api_version(), true);
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

}  // namespace apiserver
