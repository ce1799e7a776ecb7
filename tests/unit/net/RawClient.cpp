#include "RawClient.h"

#include <boost/asio/write.hpp>

namespace leasehold::net::test {

namespace asio = boost::asio;
using tcp = boost::asio::ip::tcp;
using boost::system::error_code;

std::shared_ptr<RawClient> RawClient::connect(asio::io_context& io, std::uint16_t port,
                                              bool reading, int receiveBufferBytes) {
  auto client = std::make_shared<RawClient>(io);
  client->reading_ = reading;
  client->socket_.open(tcp::v4());
  if (receiveBufferBytes > 0) {
    client->socket_.set_option(asio::socket_base::receive_buffer_size(receiveBufferBytes));
  }
  client->socket_.async_connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port),
                                [client](const error_code& ec) {
                                  if (ec) {
                                    client->failed_ = true;
                                    return;
                                  }
                                  client->connected_ = true;
                                  if (client->reading_) client->readMore();
                                });
  return client;
}

void RawClient::send(std::string bytes) {
  auto data = std::make_shared<std::string>(std::move(bytes));
  asio::async_write(socket_, asio::buffer(*data),
                    [self = shared_from_this(), data](const error_code&, std::size_t) {});
}

void RawClient::close() {
  error_code ignored;
  socket_.close(ignored);
}

std::size_t RawClient::count(const std::string& needle) const {
  std::size_t n = 0;
  for (auto at = received_.find(needle); at != std::string::npos;
       at = received_.find(needle, at + needle.size())) {
    ++n;
  }
  return n;
}

void RawClient::readMore() {
  socket_.async_read_some(asio::buffer(buffer_),
                          [self = shared_from_this()](const error_code& ec, std::size_t n) {
                            self->received_.append(self->buffer_, n);
                            if (ec) {
                              self->eof_ = true;
                              self->close();  // as a real client would
                              return;
                            }
                            self->readMore();
                          });
}

}  // namespace leasehold::net::test
