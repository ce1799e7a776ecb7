// The verbs every resource serves alike: get, list (selectors, limit/continue, Exact LISTs from
// the watch cache's history, Tables) and delete (with preconditions). Writes are per resource
// (LeaseHandlers, EventHandlers, PodHandlers) but for the create path Leases and Events share;
// watch is WatchHandler.
#pragma once

#include <string>

#include "handlers/HandlerContext.h"
#include "http/HttpMessage.h"
#include "json/Json.h"
#include "store/Collection.h"
#include "store/ManagedFields.h"
#include "store/Selector.h"

namespace apiserver {

// The request's fieldSelector (only the resource's selectable fields) and labelSelector.
bool parse_selectors(const HandlerContext& c, Selector& fs, Selector& ls, HttpResponse& err);

HttpResponse get_object(const HandlerContext& c);
HttpResponse list_objects(const HandlerContext& c);
HttpResponse delete_object(const HandlerContext& c);

// The end of a validated Lease or Event create: `create` (a POST) with metadata.resourceVersion
// set is a 500 (the real server's text), an existing `key` a 409; otherwise `object` is stored
// without resourceVersion and uid, the request's manager owning `leaves`, and answered with 201.
HttpResponse create_object(const HandlerContext& c, Collection& col, const std::string& key,
                           const std::string& name, bool create, J object, const Leaves& leaves);

}  // namespace apiserver
