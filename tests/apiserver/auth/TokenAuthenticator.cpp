// Static token authentication (see TokenAuthenticator.h).
#include "auth/TokenAuthenticator.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include "gocompat/GoTime.h"

namespace apiserver {

namespace {

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (char c : line) {
    if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  for (auto& s : out) {
    size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
    s = a == std::string::npos ? "" : s.substr(a, b - a + 1);
  }
  return out;
}

}  // namespace

void TokenAuthenticator::add(const std::string& token, const TokenEntry& e) {
  tokens_[token] = e;
}

bool TokenAuthenticator::load_file(const std::string& file, std::string& err) {
  token_file_ = file;
  std::ifstream in(file);
  if (!in) {
    err = "cannot read token file " + file;
    return false;
  }
  std::map<std::string, TokenEntry> fresh;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto f = split_csv(line);
    if (f.size() < 2 || f[0].empty() || f[1].empty()) continue;
    TokenEntry e;
    e.user = f[1];
    for (size_t i = 2; i < f.size(); ++i) {
      std::stringstream gs(f[i]);
      std::string g;
      while (std::getline(gs, g, ','))
        if (!g.empty()) e.groups.push_back(g);
    }
    e.admin = e.user == "admin" ||
              std::find(e.groups.begin(), e.groups.end(), "system:masters") != e.groups.end();
    fresh[f[0]] = e;
  }
  // Tokens that disappeared keep working for the grace window (like the real 10 s token cache).
  int64_t until = now_ms() + int64_t{token_grace_s_} * 1000;
  if (token_grace_s_ > 0)
    for (auto& [t, e] : tokens_)
      if (!fresh.count(t)) expiring_[t] = {e, until};
  for (auto& [t, e] : fresh)
    expiring_.erase(t);
  tokens_ = std::move(fresh);
  struct stat st {};
  if (::stat(file.c_str(), &st) == 0) {
    token_mtime_ns_ = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
    token_size_ = st.st_size;
  }
  return true;
}

bool TokenAuthenticator::maybe_reload(bool force) {
  if (token_file_.empty()) return false;
  struct stat st {};
  if (::stat(token_file_.c_str(), &st) != 0) return false;
  int64_t m = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
  if (!force && m == token_mtime_ns_ && st.st_size == token_size_) return false;
  std::string err;
  return load_file(token_file_, err);
}

void TokenAuthenticator::authenticate(const std::string& auth, RequestInfo& info) const {
  std::string lower = auth.substr(0, 7);
  for (auto& c : lower)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "bearer ") {
    std::string token = auth.substr(7);
    size_t a = token.find_first_not_of(' '), b = token.find_last_not_of(' ');
    token = a == std::string::npos ? "" : token.substr(a, b - a + 1);
    const TokenEntry* e = nullptr;
    if (auto it = tokens_.find(token); it != tokens_.end() && !token.empty()) e = &it->second;
    if (!e)
      if (auto it = expiring_.find(token); it != expiring_.end() && it->second.second > now_ms())
        e = &it->second.first;
    if (!e) {
      info.bad_token = true;
    } else {
      info.user = e->user;
      info.groups = e->groups;
      info.admin = e->admin;
      info.groups.push_back("system:authenticated");
      const std::string sa = "system:serviceaccount:";
      if (info.user.rfind(sa, 0) == 0) {
        std::string rest = info.user.substr(sa.size());
        info.groups.push_back("system:serviceaccounts");
        info.groups.push_back("system:serviceaccounts:" + rest.substr(0, rest.find(':')));
      }
    }
  } else {
    info.user = "system:anonymous";
    info.groups = {"system:unauthenticated"};
  }
}

}  // namespace apiserver
