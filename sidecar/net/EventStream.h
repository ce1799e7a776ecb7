#pragma once
// One open Server-Sent-Events response (text/event-stream) as seen by the application. The
// server implements it; tests of the application can implement it with a fake.
//
// Writes never block and never grow without bound: each client has a fixed-size buffer
// (HttpServer::Options::eventStreamBufferBytes). A client that does not read fast enough fills
// it, and the server then drops that client (closes its connection) instead of stalling the
// event loop or the other clients.
#include <functional>
#include <string>
#include <string_view>

namespace leasehold::net {

class EventStream {
 public:
  virtual ~EventStream() = default;

  // Queues one event: every line of `data` becomes a "data: " line, then a blank line ends the
  // event. Returns false if the stream is closed, including when this event overflowed the
  // client's buffer and the client was dropped because of it.
  virtual bool send(std::string_view data) = 0;
  // Queues a comment line (": text"), e.g. as keep-alive; multi-line text becomes several
  // comment lines. Same return value as send().
  virtual bool comment(std::string_view text) = 0;
  virtual bool closed() const = 0;
  // Closes the connection (pending bytes are discarded).
  virtual void close() = 0;
  // Runs once, from the event loop (never inside send()/close()), after the stream closed for
  // any reason: client gone, dropped, close(), server stopped. If the stream is closed already
  // it runs at once. Replaces an earlier callback. Not called once the server is destroyed.
  virtual void onClose(std::function<void()> callback) = 0;

  // The wire format, for implementations and tests.
  static void appendEvent(std::string& out, std::string_view data);
  static void appendComment(std::string& out, std::string_view text);
  static std::size_t eventSize(std::string_view data);
  static std::size_t commentSize(std::string_view text);
};

}  // namespace leasehold::net
