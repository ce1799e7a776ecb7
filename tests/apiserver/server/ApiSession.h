// One API connection: TLS handshake, then request after request (keep-alive): classify it,
// count it, apply partitions and fault rules, let the Api answer, write the answer or stream the
// watch. Oversized bodies get 413, unparsable requests 400.
#pragma once

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>

#include "server/ServerState.h"
#include "server/StreamIo.h"

namespace apiserver {

// Instantiated for beast::tcp_stream and beast::ssl_stream<beast::tcp_stream>.
template <class Stream>
net::awaitable<void> api_session(Stream stream, ServerState& S, bool tls);

}  // namespace apiserver
