// What a request is about, the apiserver's RequestInfo: resource or not, verb, group, version,
// resource, namespace, name; plus who asks (filled by TokenAuthenticator). Computed before the
// request is served, so that counters, faults and authorization can use it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "http/HttpMessage.h"

namespace apiserver {

// Who is asking and what for; computed before the request is served so that counters and faults
// can use it.
struct RequestInfo {
  std::string user;  // authenticated user; "system:anonymous"; "" when the token is bad
  std::vector<std::string> groups;
  bool bad_token = false;
  bool admin = false;
  bool resource_request = false;
  std::string verb;   // get list watch create update patch delete deletecollection
  std::string group;  // API group ("" = core)
  std::string version;
  std::string resource;  // leases events pods
  std::string ns;        // "" = all namespaces
  std::string name;
  std::string subresource;
  std::string path;
  std::map<std::string, std::string> query;
};

// Path, query, verb and the resource coordinates of `req` (list and watch with
// fieldSelector=metadata.name=X count as named, as in the real server); no identity yet.
RequestInfo resolve_request_info(const HttpRequest& req);

// How the control API names a client: the authenticated user, "<invalid-token>" for a bad token.
std::string client_of(const RequestInfo& info);

}  // namespace apiserver
