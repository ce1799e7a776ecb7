// Status answers (see StatusResponses.h).
#include "http/StatusResponses.h"

#include <algorithm>
#include <vector>

namespace apiserver {

std::string status_json(int code, const std::string& reason, const std::string& message,
                        const J* details) {
  J s = obj();
  s["kind"] = "Status";
  s["apiVersion"] = "v1";
  s["metadata"] = obj();
  s["status"] = "Failure";
  s["message"] = message;
  if (!reason.empty()) s["reason"] = reason;
  if (details) s["details"] = *details;
  s["code"] = code;
  return dumps(s) + "\n";
}

HttpResponse status_resp(int code, const std::string& reason, const std::string& message,
                         const J* details) {
  HttpResponse r;
  r.status = code;
  r.body = status_json(code, reason, message, details);
  return r;
}

J name_details(const ResDef& rd, const std::string& name) {
  J d = obj();
  if (!name.empty()) d["name"] = name;
  if (!rd.group.empty()) d["group"] = rd.group;
  d["kind"] = rd.resource;
  return d;
}

HttpResponse not_found(const ResDef& rd, const std::string& name) {
  J d = name_details(rd, name);
  return status_resp(404, "NotFound", rd.qualified() + " \"" + name + "\" not found", &d);
}

HttpResponse already_exists(const ResDef& rd, const std::string& name) {
  J d = name_details(rd, name);
  return status_resp(409, "AlreadyExists", rd.qualified() + " \"" + name + "\" already exists", &d);
}

HttpResponse conflict(const ResDef& rd, const std::string& name, const std::string& why) {
  J d = name_details(rd, name);
  return status_resp(
      409, "Conflict",
      "Operation cannot be fulfilled on " + rd.qualified() + " \"" + name + "\": " + why, &d);
}

HttpResponse bad_request(const std::string& msg) {
  return status_resp(400, "BadRequest", msg);
}

HttpResponse invalid(const std::string& qkind, const std::string& group,
                     const std::string& detail_kind, const std::string& name,
                     const FieldErrors& errs) {
  std::vector<std::string> msgs;
  for (auto& e : errs) {
    std::string m = e.error();
    if (std::find(msgs.begin(), msgs.end(), m) == msgs.end()) msgs.push_back(m);
  }
  std::string agg;
  if (msgs.size() == 1) {
    agg = msgs[0];
  } else {
    agg = "[";
    for (size_t i = 0; i < msgs.size(); ++i)
      agg += (i ? ", " : "") + msgs[i];
    agg += "]";
  }
  J d = obj();
  if (!name.empty()) d["name"] = name;
  if (!group.empty()) d["group"] = group;
  d["kind"] = detail_kind;
  J causes = J::array();
  for (auto& e : errs)
    causes.push_back(J{{"reason", e.reason()}, {"message", e.body()}, {"field", e.field}});
  d["causes"] = causes;
  return status_resp(422, "Invalid", qkind + " \"" + name + "\" is invalid: " + agg, &d);
}

HttpResponse unsupported_put() {
  return status_resp(415, "UnsupportedMediaType",
                     "the body of the request was in an unknown format - accepted media types "
                     "include: application/json, application/yaml, "
                     "application/vnd.kubernetes.protobuf");
}

HttpResponse unsupported_patch() {
  J d = obj();
  return status_resp(415, "UnsupportedMediaType", "415: Unsupported Media Type", &d);
}

HttpResponse method_not_allowed(const std::string& method) {
  J d = obj();
  return status_resp(
      405, "MethodNotAllowed",
      "the server does not allow this method on the requested resource (" + method + ")", &d);
}

HttpResponse text_resp(int code, const std::string& body) {
  HttpResponse r;
  r.status = code;
  r.content_type = "text/plain; charset=utf-8";
  r.body = body;
  return r;
}

HttpResponse json_resp(int code, const J& j) {
  HttpResponse r;
  r.status = code;
  r.body = dumps(j) + "\n";
  return r;
}

}  // namespace apiserver
