#pragma once
// POST /mutate: an admission.k8s.io/v1 AdmissionReview in, one out. Pure (no I/O): the server
// hands it the body and the parameters in effect, and writes and logs what it returns.
//
// - Not JSON, not an admission.k8s.io/v1 AdmissionReview, no request or no request.uid: HTTP
//   400 with a plain-text message saying which (the API server counts it as a failed call;
//   failurePolicy Ignore admits the pod).
// - Anything but the CREATE of a pod (resource pods, no subresource), a pod without the label
//   leasehold.io/inject: "true", a pod in kube-system: allowed untouched.
// - A labelled pod whose parameters are unusable: allowed untouched, with a warning that it will
//   never lead (the policy's warning, with the reason) unless it has a leasehold container.
// - Otherwise AnnotationRules decides (refused: 403 with its message), then a pod that has a
//   container named leasehold (init or app) is allowed untouched, else SidecarPatch's patch.
// - request.object not a pod as the API server sends one (no spec.containers list, a list that
//   is not one, an annotation that is not a string): refused with code 400 naming the field.
#include <string>
#include <string_view>
#include <variant>

#include "inject/InjectorParams.h"
#include "log/Logger.h"

namespace leasehold::inject {

// The parameters in effect, or why there are none (names the file or key).
using ParamsState = std::variant<InjectorParams, std::string>;

struct AdmissionReply {
  int httpStatus = 200;
  std::string contentType;  // application/json, or text/plain for a 400
  std::string body;
  // For the log line: what was decided ("injected", "refused", "untouched", "bad review",...)
  // and about what (uid, namespace, pod, lease, reason). Names only, never a value of the pod's
  // env or anything else it carries.
  std::string decision;
  log::Fields fields;
};

class AdmissionReviewHandler {
 public:
  static AdmissionReply handle(std::string_view body, const ParamsState& params);
};

}  // namespace leasehold::inject
