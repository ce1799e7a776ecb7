// The test API server's Kubernetes semantics, free of any networking (no Beast here).
// main.cpp feeds parsed HTTP requests in and writes the answers (or watch streams) out.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "json/Json.h"

namespace apiserver {

struct HttpRequest {
  std::string method;
  std::string target;                                        // path?query as received
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-case
  std::string body;
  std::string local_address;  // host:port of the listening socket (for /api)
  std::string header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

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

// A label or field selector: equality terms only (k=v, k==v, k!=v, k, !k).
struct Selector {
  struct Term {
    std::string key;
    std::string value;
    enum Op { kEq, kNe, kExists, kNotExists } op = kEq;
  };
  std::vector<Term> terms;
  bool matches(const std::function<std::optional<std::string>(const std::string&)>& get) const;
};

struct Watcher {
  std::string collection;  // leases events pods
  std::string ns;
  Selector fields;
  Selector labels;
  std::string api_version;   // for events.k8s.io conversion
  uint64_t start_rv = 0;     // events up to here were sent with the start of the stream
  uint64_t bookmark_rv = 0;  // a bookmark is due once the resource has moved past this RV
  std::string client;
  std::deque<std::string> queue;  // serialised event lines, each ending in '\n'
  size_t queued_bytes = 0;
  bool overflow = false;
  std::function<void()> wake;
};

struct WatchStart {
  std::shared_ptr<Watcher> watcher;  // null: stream ends right after `initial`
  std::string initial;               // lines to send first, in one chunk
  int timeout_seconds = 0;
  bool bookmarks = false;
};

struct Result {
  HttpResponse response;
  std::optional<WatchStart> watch;
};

struct TokenEntry {
  std::string user;
  std::vector<std::string> groups;
  bool admin = false;
};

class Store;

class Api {
 public:
  Api();
  ~Api();

  // Configuration.
  bool load_tokens(const std::string& file, std::string& err);  // token,user[,uid[,groups]]
  void add_token(const std::string& token, const TokenEntry& e);
  bool maybe_reload_tokens(bool force);  // true when reloaded
  void set_token_grace(int seconds) { token_grace_s_ = seconds; }
  bool load_rbac(const std::string& file, std::string& err);
  bool load_pods(const std::string& file, std::string& err);
  bool add_pod_spec(const std::string& spec, std::string& err);  // ns/name[=ip]
  void set_watch_history(size_t n);
  void add_deny(const std::string& spec);  // user:verb:resource

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
  std::unique_ptr<Store> store_;
  std::string token_file_;
  int64_t token_mtime_ns_ = -1;
  int64_t token_size_ = -1;
  int token_grace_s_ = 0;
  std::map<std::string, TokenEntry> tokens_;
  std::map<std::string, std::pair<TokenEntry, int64_t>> expiring_;  // token -> (entry, until ms)
};

// Helpers shared with main.cpp and tests.
std::string status_json(int code, const std::string& reason, const std::string& message,
                        const J* details);
std::string dumps(const J& j);
std::string url_decode(std::string_view s, bool plus_is_space);
std::map<std::string, std::string> parse_query(std::string_view q);
std::string rfc3339_now();
int64_t now_ms();

}  // namespace apiserver
