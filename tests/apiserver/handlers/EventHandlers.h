// Events, core/v1 and events.k8s.io/v1: create, update and patch, decoded into the stored core
// form (EventVersions.h), validated as each API version does (eventTime-era rules:
// reportingController, reportingInstance, action, reason), with managedFields per version.
#pragma once

#include "handlers/HandlerContext.h"
#include "http/HttpMessage.h"
#include "json/Json.h"
#include "store/Collection.h"

namespace apiserver {

// POST (create) or PUT of `body`; old_obj is unused (kept for the patch path's call).
HttpResponse event_write(const HandlerContext& c, const J& body, bool create, const Obj* old_obj);
HttpResponse event_patch(const HandlerContext& c);

}  // namespace apiserver
