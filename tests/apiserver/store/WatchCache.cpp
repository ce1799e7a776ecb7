// The watch cache (see WatchCache.h).
#include "store/WatchCache.h"

#include <utility>

#include "json/KubeObject.h"
#include "store/Resources.h"

namespace apiserver {

namespace {

constexpr size_t kMaxWatchQueueBytes = 32u << 20;

J empty_object_for(const std::string& collection) {
  if (collection == "leases") return J{{"spec", obj()}};
  if (collection == "pods") return J{{"spec", J{{"containers", nullptr}}}, {"status", obj()}};
  return J{{"involvedObject", obj()},  {"source", obj()},      {"firstTimestamp", nullptr},
           {"lastTimestamp", nullptr}, {"eventTime", nullptr}, {"reportingComponent", ""},
           {"reportingInstance", ""}};
}

}  // namespace

std::string event_line(const std::string& type, const J& o) {
  return dumps(J{{"type", type}, {"object", o}}) + "\n";
}

std::string bookmark_event(const Watcher& w, uint64_t rv, bool initial_end) {
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

bool watch_matches(const Watcher& w, const J& o) {
  return object_matches(w.ns, w.fields, w.labels, o);
}

void record(Collection& c, size_t history_cap, const std::string& type, const std::string& key,
            const J& o, std::optional<J> prev) {
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

}  // namespace apiserver
