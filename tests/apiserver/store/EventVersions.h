// core/v1 and events.k8s.io/v1 Events: Events are stored in core form (the field order of the
// real server's core answers) and converted to and from events.k8s.io/v1, like the real
// conversion (reportingController, regarding, note, deprecated* fields).
#pragma once

#include "json/Json.h"

namespace apiserver {

J core_event_canonical(const J& e);  // core fields in Go's order, empty optional ones dropped
J core_to_v1_event(const J& c);
J v1_to_core_event(const J& v);  // to canonical core form

}  // namespace apiserver
