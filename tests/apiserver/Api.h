// The stand-in kube-apiserver's Kubernetes side, free of any networking (no Beast here): its
// configuration (tokens, RBAC, deny rules, seed Pods, watch history), the classification of a
// request (RequestInfo, with identity) that counters and faults use before it is served, the
// dispatch to the handlers, and the control API's direct reads and writes. The server side
// (server/) feeds parsed HTTP requests in and writes the answers (or watch streams) out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "auth/DenyRules.h"
#include "auth/RbacPolicy.h"
#include "auth/TokenAuthenticator.h"
#include "handlers/HandlerContext.h"
#include "http/HttpMessage.h"
#include "http/RequestInfo.h"
#include "json/Json.h"
#include "store/Store.h"
#include "store/Watcher.h"

namespace apiserver {

class Api {
 public:
  // Configuration.
  bool load_tokens(const std::string& file, std::string& err) {  // token,user[,uid[,groups]]
    return tokens_.load_file(file, err);
  }
  void add_token(const std::string& token, const TokenEntry& e) { tokens_.add(token, e); }
  bool maybe_reload_tokens(bool force) { return tokens_.maybe_reload(force); }  // true: reloaded
  void set_token_grace(int seconds) { tokens_.set_grace_seconds(seconds); }
  bool load_rbac(const std::string& file, std::string& err) {
    return rbac_.load_file(file, store_.service_accounts, err);
  }
  bool load_pods(const std::string& file, std::string& err);
  bool add_pod_spec(const std::string& spec, std::string& err);  // ns/name[=ip]
  void set_watch_history(size_t n);
  void add_deny(const std::string& spec) { deny_.add(spec); }  // user:verb:resource

  RequestInfo classify(const HttpRequest& req) const;
  Result handle(const HttpRequest& req, const RequestInfo& info);

  // The watch line to send as a bookmark now, or "" when the resource has not moved past the RV
  // the watch asked for (or the last bookmark) -- the real watch cache's rule.
  std::string bookmark_line(Watcher& w) const;

  // Control-plane helpers (used by the control endpoint).
  std::optional<J> raw_get(const std::string& collection, const std::string& ns,
                           const std::string& name) const;
  // Sets spec/metadata labels+annotations of a lease directly (creating it if missing). Returns
  // the stored object.
  J raw_put_lease(const std::string& ns, const std::string& name, const J& body);
  bool raw_delete(const std::string& collection, const std::string& ns, const std::string& name);
  uint64_t current_rv() const;
  size_t watcher_count() const;

 private:
  Store store_;
  TokenAuthenticator tokens_;
  RbacPolicy rbac_;
  DenyRules deny_;
};

}  // namespace apiserver
