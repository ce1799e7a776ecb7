#pragma once
// Server-sent events of one JSON document (GET /shards/watch): a new client gets the current
// document at once, every client gets it again whenever publish() is given a different one,
// and a ": keep-alive" comment every keepAliveInterval. A client that cannot keep up is dropped
// by net::EventStream and forgotten here.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "net/EventStream.h"
#include "time/Clock.h"

namespace leasehold::publish {

class JsonEventStream {
 public:
  JsonEventStream(time::Clock& clock, std::function<std::string()> current,
                  time::Duration keepAliveInterval = std::chrono::seconds(15));
  ~JsonEventStream();
  JsonEventStream(const JsonEventStream&) = delete;
  JsonEventStream& operator=(const JsonEventStream&) = delete;

  void add(std::shared_ptr<net::EventStream> client);
  // Sends `json` to every client unless it is what they got last.
  void publish(const std::string& json);
  void closeAll();

 private:
  void keepAlive();

  time::Clock& clock_;
  std::function<std::string()> current_;
  time::Duration keepAliveInterval_;
  std::vector<std::shared_ptr<net::EventStream>> clients_;
  std::string lastSent_;
  std::unique_ptr<time::Timer> keepAliveTimer_;
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace leasehold::publish
