// Event conversion (see EventVersions.h).
#include "store/EventVersions.h"

#include <initializer_list>
#include <string>
#include <utility>

#include "json/KubeObject.h"

namespace apiserver {

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

}  // namespace apiserver
