// Bearer-token authentication as kube-apiserver's --token-auth-file does it: a static token file
// (token,user[,uid[,"g1,g2"]]), re-read when it changes, and tokens removed from it honoured for a
// grace window (the real server caches tokens for ~10 s). Anonymous requests (no Authorization
// header) are system:anonymous; service accounts get their groups.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "http/RequestInfo.h"

namespace apiserver {

struct TokenEntry {
  std::string user;
  std::vector<std::string> groups;
  bool admin = false;
};

class TokenAuthenticator {
 public:
  bool load_file(const std::string& file, std::string& err);  // token,user[,uid[,groups]]
  void add(const std::string& token, const TokenEntry& e);
  bool maybe_reload(bool force);  // re-reads the file when changed (or forced); true when reloaded
  void set_grace_seconds(int seconds) { token_grace_s_ = seconds; }

  // Fills user, groups, admin or bad_token of `info` from the Authorization header's value.
  void authenticate(const std::string& auth, RequestInfo& info) const;

 private:
  std::string token_file_;
  int64_t token_mtime_ns_ = -1;
  int64_t token_size_ = -1;
  int token_grace_s_ = 0;
  std::map<std::string, TokenEntry> tokens_;
  std::map<std::string, std::pair<TokenEntry, int64_t>> expiring_;  // token -> (entry, until ms)
};

}  // namespace apiserver
