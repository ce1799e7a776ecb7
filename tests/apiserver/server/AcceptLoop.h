// Accepting connections: each gets its own coroutine on the one io_context (API sessions over
// TLS or plain TCP, or control sessions), so a hung or partitioned client never blocks others.
#pragma once

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>

#include "server/ServerState.h"
#include "server/StreamIo.h"

namespace apiserver {

// tls null: plain HTTP. control_plane: the connections are control sessions.
net::awaitable<void> accept_loop(tcp::acceptor& acc, ServerState& S, net::ssl::context* tls,
                                 bool control_plane);

}  // namespace apiserver
