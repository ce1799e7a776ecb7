// The answers of the Kubernetes API that are not objects: metav1.Status failures (404 NotFound,
// 409 AlreadyExists/Conflict, 400 BadRequest, 422 Invalid, 415, 405) with the real server's
// texts and details, and plain JSON or text answers.
#pragma once

#include <string>

#include "http/HttpMessage.h"
#include "json/Json.h"
#include "store/Resources.h"
#include "validation/FieldError.h"

namespace apiserver {

// A Status of failure as JSON text (ending in a newline); `details` may be null.
std::string status_json(int code, const std::string& reason, const std::string& message,
                        const J* details);
HttpResponse status_resp(int code, const std::string& reason, const std::string& message,
                         const J* details = nullptr);

J name_details(const ResDef& rd, const std::string& name);  // Status details {name, group, kind}
HttpResponse not_found(const ResDef& rd, const std::string& name);
HttpResponse already_exists(const ResDef& rd, const std::string& name);
HttpResponse conflict(const ResDef& rd, const std::string& name, const std::string& why);
HttpResponse bad_request(const std::string& msg);
// 422 with the field errors as causes; `qkind` names the object in the message.
HttpResponse invalid(const std::string& qkind, const std::string& group,
                     const std::string& detail_kind, const std::string& name,
                     const FieldErrors& errs);
HttpResponse unsupported_put();    // 415 for a create/update body of an unknown media type
HttpResponse unsupported_patch();  // 415 for a patch of an unknown patch type
HttpResponse method_not_allowed(const std::string& method);

HttpResponse text_resp(int code, const std::string& body);  // text/plain
HttpResponse json_resp(int code, const J& j);               // compact JSON and a newline

}  // namespace apiserver
