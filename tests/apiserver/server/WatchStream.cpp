// Watch streams (see WatchStream.h).
#include "server/WatchStream.h"

#include <chrono>
#include <string>

#include "server/HttpWire.h"

namespace apiserver {

using namespace std::chrono_literals;

template <class Stream>
net::awaitable<void> stream_watch(Stream& stream, ServerState& S, std::shared_ptr<Connection> conn,
                                  WatchStart ws) {
  auto exec = co_await net::this_coro::executor;
  beast::error_code ec;
  std::string head =
      "HTTP/1.1 200 OK\r\nAudit-Id: 00000000-0000-4000-8000-000000000000\r\nCache-Control: "
      "no-cache, private\r\nContent-Type: application/json\r\nDate: " +
      http_date() + "\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n";
  if (!ws.initial.empty()) head += chunk(ws.initial);
  if (!ws.watcher) {
    head += "0\r\n\r\n";
    co_await write_all(stream, head, ec);
    co_return;
  }
  co_await write_all(stream, head, ec);
  if (ec) co_return;
  auto w = ws.watcher;
  auto timer = std::make_shared<net::steady_timer>(exec);
  std::weak_ptr<net::steady_timer> wt = timer;
  w->wake = [wt] {
    if (auto t = wt.lock()) t->cancel();
  };
  conn->watching = true;
  conn->wake = w->wake;
  // Detect the client going away while we only write.
  auto detector_done = std::make_shared<bool>(false);
  auto peer_closed = std::make_shared<bool>(false);
  net::co_spawn(
      exec,
      [&stream, detector_done, peer_closed, wt]() -> net::awaitable<void> {
        char buf[512];
        for (;;) {
          beast::error_code rec;
          co_await stream.async_read_some(net::buffer(buf),
                                          net::redirect_error(net::use_awaitable, rec));
          if (rec) break;
        }
        *peer_closed = true;
        *detector_done = true;
        if (auto t = wt.lock()) t->cancel();
      },
      net::detached);

  auto start = std::chrono::steady_clock::now();
  auto deadline = start + std::chrono::seconds(ws.timeout_seconds);
  auto pre_timeout = deadline - 2s;
  bool pre_sent = !ws.bookmarks || pre_timeout <= start;
  auto periodic = start + 60s;
  bool clean_end = false;
  for (;;) {
    if (*peer_closed || w->overflow || conn->cut) {
      clean_end = conn->cut && conn->cut_clean;
      break;
    }
    bool frozen = S.partitioned.count(conn->client) > 0;
    auto now = std::chrono::steady_clock::now();
    if (!frozen) {
      if (!w->queue.empty()) {
        std::string data;
        for (auto& l : w->queue)
          data += l;
        w->queue.clear();
        w->queued_bytes = 0;
        co_await write_all(stream, chunk(data), ec);
        if (ec) break;
        continue;
      }
      if (now >= deadline) {
        clean_end = true;
        break;
      }
      if (ws.bookmarks && ((!pre_sent && now >= pre_timeout) || now >= periodic)) {
        if (now >= pre_timeout) pre_sent = true;
        if (now >= periodic) periodic = now + 60s;
        std::string line = S.api.bookmark_line(*w);
        if (!line.empty()) {
          co_await write_all(stream, chunk(line), ec);
          if (ec) break;
        }
        continue;
      }
    }
    auto next = deadline;
    if (ws.bookmarks) {
      if (!pre_sent && pre_timeout < next) next = pre_timeout;
      if (periodic < next) next = periodic;
    }
    if (frozen) next = now + 3600s;
    timer->expires_at(next);
    beast::error_code tec;
    co_await timer->async_wait(net::redirect_error(net::use_awaitable, tec));
  }
  w->wake = nullptr;
  conn->wake = nullptr;
  conn->watching = false;
  if (clean_end && !*peer_closed) co_await write_all(stream, std::string("0\r\n\r\n"), ec);
  close_stream(stream);
  while (!*detector_done) {
    timer->expires_after(50ms);
    beast::error_code tec;
    co_await timer->async_wait(net::redirect_error(net::use_awaitable, tec));
  }
}

template net::awaitable<void> stream_watch(beast::tcp_stream&, ServerState&,
                                           std::shared_ptr<Connection>, WatchStart);
template net::awaitable<void> stream_watch(beast::ssl_stream<beast::tcp_stream>&, ServerState&,
                                           std::shared_ptr<Connection>, WatchStart);

}  // namespace apiserver
