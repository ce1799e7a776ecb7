// WATCH requests (see WatchHandler.h).
#include "handlers/WatchHandler.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>

#include "handlers/CollectionHandlers.h"
#include "http/StatusResponses.h"
#include "store/WatchCache.h"

namespace apiserver {

Result watch_objects(const HandlerContext& c) {
  Result r;
  Collection& col = c.st.coll(c.rd.collection);
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
      if (watch_matches(*w, o.obj))
        ws.initial += event_line("ADDED", versioned(col.name, o.obj, w->api_version, true));
    w->start_rv = w->bookmark_rv = col.last_rv;
    // v1.37 ends the initial ADDEDs with a bookmark (in the same chunk) also for watches that
    // did not ask for sendInitialEvents.
    if (ws.bookmarks) ws.initial += bookmark_event(*w, col.last_rv, true);
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
      ws.initial = event_line("ERROR", s);
      r.watch = ws;
      return r;
    }
    for (auto& ev : col.history)
      if (ev.rv > from && watch_matches(*w, ev.obj))
        ws.initial += event_line(ev.type, versioned(col.name, ev.obj, w->api_version, true));
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

}  // namespace apiserver
