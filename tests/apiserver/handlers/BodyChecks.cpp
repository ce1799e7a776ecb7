// Body checks shared by the resource handlers (see BodyChecks.h).
#include "handlers/BodyChecks.h"

#include "gocompat/GoQuote.h"
#include "handlers/ObjectDecoding.h"
#include "http/MediaTypes.h"
#include "http/StatusResponses.h"
#include "json/BodyParser.h"
#include "store/RandomIds.h"

namespace apiserver {

bool read_object(const HandlerContext& c, const std::string& kind, bool is_patch_result, J& out,
                 HttpResponse& err) {
  if (!is_patch_result) {
    std::string mt = media_type(c.req.header("content-type"));
    bool yaml = mt == "application/yaml";
    if (!(mt.empty() || mt == "application/json" || yaml)) {
      err = unsupported_put();
      return false;
    }
    std::string perr;
    if (!parse_json_body(c.req.body, yaml, out, perr)) {
      std::string summary = c.req.body.size() > 30 ? c.req.body.substr(0, 30) + " ..." : c.req.body;
      err = bad_request("the object provided is unrecognized (must be of type " + kind +
                        "): couldn't get version/kind; json parse error: " + perr + " (" + summary +
                        ")");
      return false;
    }
  }
  if (!out.is_object()) {
    std::string summary = c.req.body.size() > 30 ? c.req.body.substr(0, 30) + " ..." : c.req.body;
    err = bad_request("the object provided is unrecognized (must be of type " + kind +
                      "): couldn't get version/kind; json parse error: json: cannot unmarshal " +
                      go_json_type(out) +
                      " into Go value of type struct { APIVersion string "
                      "\"json:\\\"apiVersion,omitempty\\\"\"; Kind string "
                      "\"json:\\\"kind,omitempty\\\"\" } (" +
                      summary + ")");
    return false;
  }
  return true;
}

HttpResponse cannot_handle(const HandlerContext& c, const J& body, const std::string& kind,
                           const std::string& err) {
  std::string bk =
      body.contains("kind") && body["kind"].is_string() && !body["kind"].get<std::string>().empty()
          ? body["kind"].get<std::string>()
          : kind;
  std::string av = body.contains("apiVersion") && body["apiVersion"].is_string() &&
                           !body["apiVersion"].get<std::string>().empty()
                       ? body["apiVersion"].get<std::string>()
                       : c.rd.api_version();
  std::string ver = av.substr(av.find('/') == std::string::npos ? 0 : av.find('/') + 1);
  return bad_request(bk + " in version " + go_quote(ver) + " cannot be handled as a " + kind +
                     ": " + err);
}

std::optional<HttpResponse> check_gvk(const HandlerContext& c, const J& body,
                                      const std::string& kind) {
  for (const char* k : {"kind", "apiVersion"})
    if (body.contains(k) && !body[k].is_null() && !body[k].is_string())
      return cannot_handle(c, J(), kind,
                           unmarshal_err(body[k], std::string("TypeMeta.") + k, "string"));
  std::string bk = body.value("kind", std::string());
  std::string av = body.value("apiVersion", std::string());
  if ((!bk.empty() && bk != kind) || (!av.empty() && av != c.rd.api_version())) {
    if (!bk.empty() && bk != kind)
      return bad_request("the object provided is unrecognized (must be of type " + kind +
                         "): no kind \"" + bk + "\" is registered for version \"" +
                         (av.empty() ? c.rd.api_version() : av) + "\"");
    return bad_request("the API version in the data (" + av +
                       ") does not match the expected API version (" + c.rd.api_version() + ")");
  }
  return std::nullopt;
}

std::optional<HttpResponse> settle_name_ns(const HandlerContext& c, J& meta) {
  std::string bns = meta.value("namespace", std::string());
  if (!bns.empty() && bns != c.info.ns)
    return bad_request(
        "the namespace of the provided object does not match the namespace sent on the request");
  meta["namespace"] = c.info.ns;
  if (meta.value("name", std::string()).empty() &&
      !meta.value("generateName", std::string()).empty())
    meta["name"] = meta["generateName"].get<std::string>() + random_suffix(5);
  return std::nullopt;
}

}  // namespace apiserver
