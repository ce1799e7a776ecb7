// The watch cache of one Collection: its history window of events (the last N, so a watch or
// an Exact LIST from an older RV is told 410), the fan-out of each change to the open watchers,
// bookmarks, and the collection's state at an RV inside the window.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "json/Json.h"
#include "store/Collection.h"
#include "store/Watcher.h"

namespace apiserver {

// One watch event as the line it is sent as: {"type":..., "object":...} and a newline.
std::string event_line(const std::string& type, const J& o);

// A BOOKMARK at `rv`: an empty object of the watched kind (no creationTimestamp since v1.33's
// omitzero), annotated when it ends the initial events.
std::string bookmark_event(const Watcher& w, uint64_t rv, bool initial_end);

bool watch_matches(const Watcher& w, const J& o);

// Appends the event `o` (at its metadata.resourceVersion) to the history (at most history_cap
// events) and queues its line on every matching watcher; a watcher whose queue passes 32 MiB is
// marked overflowed (the server then closes it).
void record(Collection& c, size_t history_cap, const std::string& type, const std::string& key,
            const J& o, std::optional<J> prev);

// State of the collection at resource version `rv` (from the history window).
std::map<std::string, J> state_at(const Collection& col, uint64_t rv);

}  // namespace apiserver
