// Accept loops (see AcceptLoop.h).
#include "server/AcceptLoop.h"

#include <utility>

#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>

#include "server/ApiSession.h"
#include "server/ControlApi.h"

namespace apiserver {

net::awaitable<void> accept_loop(tcp::acceptor& acc, ServerState& S, net::ssl::context* tls,
                                 bool control_plane) {
  for (;;) {
    beast::error_code ec;
    tcp::socket sock = co_await acc.async_accept(net::redirect_error(net::use_awaitable, ec));
    if (ec) {
      if (ec == net::error::operation_aborted) co_return;
      continue;
    }
    sock.set_option(tcp::no_delay(true), ec);
    auto exec = acc.get_executor();
    if (control_plane) {
      net::co_spawn(exec, control_session(beast::tcp_stream(std::move(sock)), S), net::detached);
    } else if (tls) {
      net::co_spawn(exec,
                    api_session(beast::ssl_stream<beast::tcp_stream>(
                                    beast::tcp_stream(std::move(sock)), *tls),
                                S, true),
                    net::detached);
    } else {
      net::co_spawn(exec, api_session(beast::tcp_stream(std::move(sock)), S, false), net::detached);
    }
  }
}

}  // namespace apiserver
