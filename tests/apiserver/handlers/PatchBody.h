// PATCH bodies: JSON patch, merge patch and strategic merge patch (as a merge patch without
// $-directives, enough for the objects here) applied to the current object.
#pragma once

#include <optional>
#include <string>

#include "handlers/HandlerContext.h"
#include "http/HttpMessage.h"
#include "json/Json.h"

namespace apiserver {

// Applies the request's PATCH body to `current` (with kind/apiVersion) into `result`. Returns
// nullopt on success, else the answer (415, 400, 422).
std::optional<HttpResponse> apply_patch(const HandlerContext& c, const J& current, J& result);

}  // namespace apiserver
