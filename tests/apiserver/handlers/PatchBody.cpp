// PATCH application (see PatchBody.h).
#include "handlers/PatchBody.h"

#include "handlers/ObjectDecoding.h"
#include "http/MediaTypes.h"
#include "http/StatusResponses.h"
#include "json/BodyParser.h"

namespace apiserver {

namespace {

void strategic_strip(J& p) {
  if (p.is_object()) {
    for (auto it = p.begin(); it != p.end();) {
      if (!it.key().empty() && it.key()[0] == '$') {
        it = p.erase(it);
      } else {
        strategic_strip(*it);
        ++it;
      }
    }
  }
}

}  // namespace

std::optional<HttpResponse> apply_patch(const HandlerContext& c, const J& current, J& result) {
  std::string mt = media_type(c.req.header("content-type"));
  if (mt != "application/merge-patch+json" && mt != "application/strategic-merge-patch+json" &&
      mt != "application/json-patch+json")
    return unsupported_patch();
  if (json_depth(c.req.body) > kMaxDepth) return bad_request("invalid JSON patch");
  J patch = J::parse(c.req.body, nullptr, false);
  if (patch.is_discarded()) return bad_request("invalid JSON patch");
  try {
    if (mt == "application/json-patch+json") {
      if (!patch.is_array())
        return bad_request("error decoding patch: json: cannot unmarshal " +
                           std::string(go_json_type(patch)) +
                           " into Go value of type []handlers.jsonPatchOp");
      result = current.patch(patch);
    } else {
      if (!patch.is_object())
        return bad_request("error decoding patch: json: cannot unmarshal " +
                           std::string(go_json_type(patch)) +
                           " into Go value of type map[string]interface {}");
      result = current;
      strategic_strip(patch);
      result.merge_patch(patch);
    }
  } catch (const std::exception&) {
    J d = obj();  // v1.37 names no cause (a failed op, a missing path alike)
    return status_resp(422, "Invalid",
                       "the server rejected our request due to an error in our request", &d);
  }
  return std::nullopt;
}

}  // namespace apiserver
