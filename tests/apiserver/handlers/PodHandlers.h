// core/v1 Pods: create (the defaulting, ServiceAccount admission and the projected token volume
// and tolerations the real admission adds) and patch (labels, annotations and images only, as
// Pod update validation allows). The stand-in has no scheduler or kubelet: status stays.
#pragma once

#include "handlers/HandlerContext.h"
#include "http/HttpMessage.h"
#include "json/Json.h"

namespace apiserver {

HttpResponse pod_create(const HandlerContext& c, const J& body);
HttpResponse pod_patch(const HandlerContext& c);

}  // namespace apiserver
