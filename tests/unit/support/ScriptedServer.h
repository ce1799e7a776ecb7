#pragma once
// A test HTTP(S) server whose answers are scripted by the test, byte for byte: it can answer
// normally, in pieces, never, with garbage, or close at any point. It counts accepted
// connections and records what TLS saw (SNI, client certificate).
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace leasehold::net::test {

class ScriptedConnection : public std::enable_shared_from_this<ScriptedConnection> {
 public:
  ScriptedConnection(boost::asio::io_context& io, boost::asio::ssl::context* tls);

  void write(std::string bytes);
  // Writes what is queued, then closes.
  void closeAfterWrites();
  // Writes what is queued, then resets the connection (RST, as a load balancer or proxy does):
  // the client's next write on it fails, instead of its read finding EOF.
  void resetAfterWrites();
  void close();
  bool closed() const { return closed_; }
  std::size_t requestCount() const { return requests_.size(); }
  const std::vector<std::string>& requests() const { return requests_; }
  const std::string& sni() const { return sni_; }
  const std::string& clientCertificateSubject() const { return clientSubject_; }
  const std::string& handshakeError() const { return handshakeError_; }

 private:
  friend class ScriptedServer;
  boost::asio::ip::tcp::socket& socket();
  void start(
      std::function<void(std::shared_ptr<ScriptedConnection>, const std::string&)> onRequest);
  void readMore();
  void parseRequests();
  void flush();

  std::optional<boost::asio::ssl::stream<boost::asio::ip::tcp::socket>> tls_;
  std::optional<boost::asio::ip::tcp::socket> plain_;
  std::function<void(std::shared_ptr<ScriptedConnection>, const std::string&)> onRequest_;
  std::string input_;
  char readBuffer_[16384];
  std::deque<std::string> output_;
  bool writing_ = false;
  bool closeWhenFlushed_ = false;
  bool resetOnClose_ = false;
  bool closed_ = false;
  std::vector<std::string> requests_;
  std::string sni_;
  std::string clientSubject_;
  std::string handshakeError_;
};

class ScriptedServer {
 public:
  struct Tls {
    std::string certPem;
    std::string keyPem;
    std::string clientCaPem;  // when set, a client certificate signed by it is REQUIRED
  };
  // Called for every complete request (head + Content-Length body) with its raw text.
  using OnRequest = std::function<void(std::shared_ptr<ScriptedConnection>, const std::string&)>;

  ScriptedServer(boost::asio::io_context& io, std::optional<Tls> tls, OnRequest onRequest);
  ~ScriptedServer();

  std::uint16_t port() const { return port_; }
  std::string url() const;  // "https://127.0.0.1:port" or "http://..."
  int accepts() const { return accepts_; }
  const std::vector<std::shared_ptr<ScriptedConnection>>& connections() const {
    return connections_;
  }
  std::shared_ptr<ScriptedConnection> lastConnection() const {
    return connections_.empty() ? nullptr : connections_.back();
  }
  void setOnRequest(OnRequest onRequest) { onRequest_ = std::move(onRequest); }

  // Canned responses.
  static std::string response(int status, const std::string& body,
                              const std::string& extraHeaders = "");

 private:
  void accept();

  boost::asio::io_context& io_;
  std::optional<boost::asio::ssl::context> tlsContext_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::uint16_t port_ = 0;
  int accepts_ = 0;
  OnRequest onRequest_;
  std::vector<std::shared_ptr<ScriptedConnection>> connections_;
};

}  // namespace leasehold::net::test
