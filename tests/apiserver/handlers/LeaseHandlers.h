// coordination.k8s.io/v1 Leases: create, update (optimistic concurrency on resourceVersion) and
// patch, with Go's typed decoding, the real validation (spec.strategy and preferredHolder
// included: the CoordinatedLeaderElection gate is on in the real servers), the "unknown field"
// Warning headers and no-op updates that keep the RV; and the control API's direct write.
#pragma once

#include <string>

#include "handlers/HandlerContext.h"
#include "http/HttpMessage.h"
#include "json/Json.h"
#include "store/Store.h"

namespace apiserver {

// POST (create_only) or PUT of `body`; from_patch: the result of a PATCH (may omit the RV).
HttpResponse lease_write(const HandlerContext& c, const J& body, bool create_only, bool from_patch);
HttpResponse lease_patch(const HandlerContext& c);

// Sets spec/metadata labels+annotations of a lease directly (creating it if missing; no CAS;
// manager leasehold-test-apiserver). Returns the stored object; throws on a body that does not
// decode as a Lease.
J put_lease_directly(Store& store, const std::string& ns, const std::string& name, const J& body);

}  // namespace apiserver
