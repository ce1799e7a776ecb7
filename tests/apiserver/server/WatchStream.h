// A watch response on the wire: the chunked 200 with the initial lines, then each queued event
// as one chunk, bookmarks 2 s before timeoutSeconds and every minute (when due), until the
// timeout (final chunk), the client going away, a queue overflow, a cut from the control API,
// or, while the client is partitioned, frozen.
#pragma once

#include <memory>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>

#include "server/ServerState.h"
#include "server/StreamIo.h"
#include "store/Watcher.h"

namespace apiserver {

// Streams a watch. Returns when the stream ended (the connection is then closed by the caller).
// Instantiated for beast::tcp_stream and beast::ssl_stream<beast::tcp_stream>.
template <class Stream>
net::awaitable<void> stream_watch(Stream& stream, ServerState& S, std::shared_ptr<Connection> conn,
                                  WatchStart ws);

}  // namespace apiserver
