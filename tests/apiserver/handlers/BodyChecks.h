// The checks of a create/update body before any resource's own: media type and parse, an
// object at all, kind/apiVersion against the endpoint, namespace against the URL and name
// generation, each with the real server's 400 texts.
#pragma once

#include <optional>
#include <string>

#include "handlers/HandlerContext.h"
#include "http/HttpMessage.h"
#include "json/Json.h"

namespace apiserver {

// Reads and parses the body as an object of `kind` (is_patch_result: `out` is already parsed,
// only its type is checked). On failure fills `err`.
bool read_object(const HandlerContext& c, const std::string& kind, bool is_patch_result, J& out,
                 HttpResponse& err);
// The 400 "<Kind> in version ... cannot be handled as a <kind>: <err>".
HttpResponse cannot_handle(const HandlerContext& c, const J& body, const std::string& kind,
                           const std::string& err);
// Checks kind/apiVersion of a body against the endpoint.
std::optional<HttpResponse> check_gvk(const HandlerContext& c, const J& body,
                                      const std::string& kind);
// Fills namespace / generated name; checks the body namespace against the URL.
std::optional<HttpResponse> settle_name_ns(const HandlerContext& c, J& meta);

}  // namespace apiserver
