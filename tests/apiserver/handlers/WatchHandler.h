// WATCH on any resource, as the real watch cache answers it: without resourceVersion (or 0) the
// current objects as ADDED, then a BOOKMARK annotated k8s.io/initial-events-end (with
// allowWatchBookmarks); from an RV inside the history window the events after it; older, one
// ERROR event (410 Expired). The stream itself is the server side's (it needs the network).
#pragma once

#include "handlers/HandlerContext.h"

namespace apiserver {

// The initial lines and the registered Watcher (or an error response); timeoutSeconds, or a
// random 30-60 min when none is given.
Result watch_objects(const HandlerContext& c);

}  // namespace apiserver
