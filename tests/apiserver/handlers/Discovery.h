// The non-resource paths: discovery (/api, /apis, the groups and their resource lists, as much
// as kubectl needs for Leases, Events, Pods and Namespaces), /version (v1.37.2+leasehold-test)
// and the health paths.
#pragma once

#include <optional>
#include <string>

#include "http/HttpMessage.h"

namespace apiserver {

// The answer for `path`, or nullopt when it is not one of these (404 then).
std::optional<HttpResponse> discovery(const HttpRequest& req, const std::string& path);

}  // namespace apiserver
