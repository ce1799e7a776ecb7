// The control API (plain HTTP on --control-port; README.md lists it): counters, fault rules,
// latency, partitions, open watches and cutting them, direct Lease reads and writes, token
// reload, the current resourceVersion.
#pragma once

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>

#include "http/HttpMessage.h"
#include "server/ServerState.h"
#include "server/StreamIo.h"

namespace apiserver {

// The answer to one control request.
HttpResponse control(ServerState& S, const HttpRequest& req);
// One control connection (keep-alive); an exception in a request becomes a 500.
net::awaitable<void> control_session(beast::tcp_stream stream, ServerState& S);

}  // namespace apiserver
