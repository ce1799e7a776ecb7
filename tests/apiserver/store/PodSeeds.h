// Pods the server starts with (--pods FILE, --pod NS/NAME[=IP]): the stand-in has no scheduler
// or kubelet, so the Pods a test needs running are seeded.
#pragma once

#include <string>

#include "store/Store.h"

namespace apiserver {

// A Pod, a list of them or a PodList, as JSON or (multi-document) YAML. Missing spec/status get a
// running one-container Pod's; the namespace defaults to "default".
bool load_pod_file(Store& store, const std::string& file, std::string& err);
// ns/name[=ip]: a running Pod with one ready container "app", status.podIP when given.
bool add_pod_spec(Store& store, const std::string& spec, std::string& err);

}  // namespace apiserver
