#include "kubectl/FailureMessage.h"

namespace leasehold::kubectl {

std::string FailureMessage::describe(const kube::ApiResponse& r, const ApiAction& a,
                                     const std::string& server) {
  const std::string where = a.ns.empty() ? "in any namespace" : "in namespace \"" + a.ns + "\"";
  const std::string what = a.name.empty() ? "leases" : "lease \"" + a.name + "\"";
  const std::string serverMessage =
      r.status && !r.status->message.empty() ? ": " + r.status->message : "";
  switch (r.code) {
    case 0:
      return "cannot reach the API server at " + server + " (" + a.verb + " " + what +
             "): " + r.error;
    case 401:
      return "unauthorized (401): the API server at " + server +
             " did not accept the credentials (" + a.verb + " " + what + ")";
    case 403:
      return "forbidden (403): not allowed to " + a.verb + " leases.coordination.k8s.io " +
             (a.name.empty() ? "" : "\"" + a.name + "\" ") + where +
             " (RBAC: the user needs the \"" + a.verb + "\" verb on leases)" + serverMessage;
    case 404:
      if (!a.name.empty()) return what + " not found " + where;
      break;
    default:
      break;
  }
  return a.verb + " " + what + " " + where + " failed: " + r.describe();
}

}  // namespace leasehold::kubectl
