#include "publish/LeadershipJson.h"

#include <cstdio>

namespace leasehold::publish {
namespace {

void appendString(std::string& out, const std::string& s) {
  out += '"';
  for (const unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
}

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
  appendString(out, l.identity);
  field(out, "holder");
  appendString(out, l.holder);
  field(out, "name");
  appendString(out, l.holderPod.empty() ? l.holder : l.holderPod);
  if (!l.holderAddress.empty()) {
    field(out, "holderAddress");
    appendString(out, l.holderAddress);
  }
  field(out, "fencingToken");
  out += l.fencingToken ? std::to_string(*l.fencingToken) : "null";
  field(out, "namespace");
  appendString(out, lease.ns);
  field(out, "lease");
  appendString(out, lease.name);
  if (l.acquireTime) {
    field(out, "acquireTime");
    appendString(out, election::formatMicroTime(*l.acquireTime));
  }
  if (l.renewTime) {
    field(out, "renewTime");
    appendString(out, election::formatMicroTime(*l.renewTime));
  }
  if (l.leader && l.validUntil) {
    field(out, "validUntil");
    appendString(out, election::formatMicroTime(*l.validUntil));
  }
  out += '}';
  return out;
}

}  // namespace leasehold::publish
