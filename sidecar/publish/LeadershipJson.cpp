#include "publish/LeadershipJson.h"

#include "log/JsonString.h"

namespace leasehold::publish {
namespace {

void field(std::string& out, const char* key) {
  if (out.size() > 1) out += ',';
  out += '"';
  out += key;
  out += "\":";
}

}  // namespace

std::string leadershipJson(const election::Leadership& l, const LeaseName& lease) {
  std::string out;
  out.reserve(384);
  out += '{';
  field(out, "leader");
  out += l.leader ? "true" : "false";
  field(out, "identity");
  log::appendJsonString(out, l.identity);
  field(out, "holder");
  log::appendJsonString(out, l.holder);
  field(out, "name");
  // Apps written for contrib's leader-elector lead while "name" is their own pod. Naming this
  // replica after its claim has lapsed (renew deadline passed, shutting down, a restart with
  // the same identity) would keep such an app leading through a partition; contrib's elector
  // cleared the name too when it lost the API server.
  const bool lapsedSelf = !l.leader && !l.holder.empty() && l.holder == l.identity;
  log::appendJsonString(out, lapsedSelf            ? std::string()
                             : l.holderPod.empty() ? l.holder
                                                   : l.holderPod);
  if (!l.holderAddress.empty()) {
    field(out, "holderAddress");
    log::appendJsonString(out, l.holderAddress);
  }
  field(out, "fencingToken");
  out += l.fencingToken ? std::to_string(*l.fencingToken) : "null";
  // Where the lock lives, in the store's own word (a Lease's "namespace", etcd's "store").
  if (!lease.scopeField.empty()) {
    field(out, lease.scopeField.c_str());
    log::appendJsonString(out, lease.scope);
  }
  field(out, "lease");
  log::appendJsonString(out, lease.name);
  if (l.acquireTime) {
    field(out, "acquireTime");
    log::appendJsonString(out, time::formatMicroTime(*l.acquireTime));
  }
  if (l.renewTime) {
    field(out, "renewTime");
    log::appendJsonString(out, time::formatMicroTime(*l.renewTime));
  }
  if (l.leader && l.validUntil) {
    field(out, "validUntil");
    log::appendJsonString(out, time::formatMicroTime(*l.validUntil));
  }
  if (!l.problem.empty()) {
    field(out, "problem");
    log::appendJsonString(out, l.problem);
  }
  out += '}';
  return out;
}

}  // namespace leasehold::publish
