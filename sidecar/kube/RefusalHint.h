#pragma once
// What a refused API request (401, 403) most likely means, for the one log line the sidecar
// writes when a verb starts being refused (app/ApiConnections): the operator reads it next to
// the verb and the code, so it names the grant or the object to fix.
#include <string>

namespace leasehold::kube {

// Which of the sidecar's two connections the request went on: the Lease's (its reads, writes
// and watch; a create there is the Lease's creation) or the side one (Events, the pod label,
// LeaseCandidates).
enum class Connection { kLease, kSide };

// The hint for VERB refused with CODE on CONNECTION; "" for a code that is not a refusal.
std::string refusalHint(Connection connection, const std::string& verb, int code);

// The rule a 403 on VERB of RESOURCE (as RBAC names it: "deployments/scale", "pods") in the API
// GROUP ("" for the core group) says is missing, written as the Role's rule to add; NAME, when
// not "", is its resourceName. For the one-shot commands that run under a Role of the chart's
// (teardown/): this ServiceAccount may not patch deployments/scale "demo" (RBAC): its Role needs
// the rule {apiGroups: ["apps"], resources: [deployments/scale], resourceNames: [demo], verbs:
// [patch]}.
std::string missingGrant(const std::string& verb, const std::string& group,
                         const std::string& resource, const std::string& name);

}  // namespace leasehold::kube
