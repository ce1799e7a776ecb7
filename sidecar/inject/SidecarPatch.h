#pragma once
// The JSON Patch the chart's MutatingAdmissionPolicy applies (templates/_injector.tpl), built
// from the same parameters and annotations: the leasehold native sidecar first among the init
// containers, the status file's emptyDir, and a read-only mount of it in every app container.
// A list the pod does not have (or has empty) is added whole, as the policy does, since JSON
// Patch cannot append to a list that is not there.
#include <nlohmann/json.hpp>

#include "inject/AnnotationRules.h"
#include "inject/InjectorParams.h"

namespace leasehold::inject {

class SidecarPatch {
 public:
  // The sidecar container for `notes` (which name the Lease: AnnotationRules passed).
  static nlohmann::json sidecar(const Annotations& notes, const InjectorParams& params);
  static nlohmann::json statusVolume();
  static nlohmann::json statusMount();

  // The patch for `pod` (a Pod's JSON whose spec, containers and lists are well formed: the
  // caller checked).
  static nlohmann::json forPod(const nlohmann::json& pod, const Annotations& notes,
                               const InjectorParams& params);
};

}  // namespace leasehold::inject
