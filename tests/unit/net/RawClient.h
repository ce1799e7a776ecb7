#pragma once
// A byte-level TCP client on the test's io_context, for what a well-behaved HTTP client would
// never send (oversized headers, pipelined requests) or never do (stop reading).
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <memory>
#include <string>

namespace leasehold::net::test {

class RawClient : public std::enable_shared_from_this<RawClient> {
 public:
  // receiveBufferBytes > 0 shrinks SO_RCVBUF (a client that reads nothing then fills up fast).
  static std::shared_ptr<RawClient> connect(boost::asio::io_context& io, std::uint16_t port,
                                            bool reading = true, int receiveBufferBytes = 0);

  void send(std::string bytes);
  void close();
  bool connected() const { return connected_; }
  bool failed() const { return failed_; }
  bool eof() const { return eof_; }  // the server closed (or reset) the connection
  const std::string& received() const { return received_; }
  std::size_t count(const std::string& needle) const;

  explicit RawClient(boost::asio::io_context& io) : socket_(io) {}

 private:
  void readMore();

  boost::asio::ip::tcp::socket socket_;
  bool reading_ = true;
  bool connected_ = false;
  bool failed_ = false;
  bool eof_ = false;
  std::string received_;
  char buffer_[16384];
};

}  // namespace leasehold::net::test
