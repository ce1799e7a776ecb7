// The socket operations every session uses, on a plain TCP or a TLS stream alike: write all
// with a 30 s deadline, wait for the peer to close (a hung request), close both ways.
#pragma once

#include <chrono>
#include <string>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>

namespace apiserver {

namespace net = boost::asio;
namespace beast = boost::beast;
using tcp = net::ip::tcp;

template <class Stream>
auto& lowest(Stream& s) {
  return beast::get_lowest_layer(s);
}

template <class Stream>
net::awaitable<void> write_all(Stream& stream, const std::string& data, beast::error_code& ec) {
  lowest(stream).expires_after(std::chrono::seconds(30));
  co_await net::async_write(stream, net::buffer(data), net::redirect_error(net::use_awaitable, ec));
  lowest(stream).expires_never();
}

template <class Stream>
net::awaitable<void> wait_until_closed(Stream& stream) {
  char buf[512];
  lowest(stream).expires_never();
  for (;;) {
    beast::error_code ec;
    co_await stream.async_read_some(net::buffer(buf), net::redirect_error(net::use_awaitable, ec));
    if (ec) co_return;
  }
}

template <class Stream>
void close_stream(Stream& stream) {
  beast::error_code ec;
  lowest(stream).socket().shutdown(tcp::socket::shutdown_both, ec);
  lowest(stream).socket().close(ec);
}

}  // namespace apiserver
