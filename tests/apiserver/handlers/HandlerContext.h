// What every resource handler works with: the request, what it is about (RequestInfo), the
// resource it addresses, the store, and the field manager its writes are recorded under; and
// what a handler answers (a response, or the start of a watch stream).
#pragma once

#include <optional>
#include <string>

#include "http/HttpMessage.h"
#include "http/RequestInfo.h"
#include "store/Resources.h"
#include "store/Store.h"
#include "store/Watcher.h"

namespace apiserver {

struct Result {
  HttpResponse response;
  std::optional<WatchStart> watch;
};

struct HandlerContext {
  const HttpRequest& req;
  const RequestInfo& info;
  const ResDef& rd;
  Store& st;
  std::string manager;
  std::string q(const char* k) const {
    auto it = info.query.find(k);
    return it == info.query.end() ? std::string() : it->second;
  }
};

// fieldManager of the request, else the User-Agent's program name (like the real server).
std::string manager_of(const HttpRequest& req, const RequestInfo& info);

}  // namespace apiserver
