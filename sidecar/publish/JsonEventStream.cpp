#include "publish/JsonEventStream.h"

#include <algorithm>

namespace leasehold::publish {

JsonEventStream::JsonEventStream(time::Clock& clock, std::function<std::string()> current,
                                 time::Duration keepAliveInterval)
    : clock_(clock), current_(std::move(current)), keepAliveInterval_(keepAliveInterval) {
  keepAliveTimer_ = clock_.makeTimer([this] { keepAlive(); });
}

JsonEventStream::~JsonEventStream() {
  closeAll();
}

void JsonEventStream::add(std::shared_ptr<net::EventStream> client) {
  if (!client->send(current_())) return;
  std::weak_ptr<char> alive = alive_;
  const net::EventStream* raw = client.get();
  client->onClose([this, alive, raw] {
    if (alive.expired()) return;
    clients_.erase(std::remove_if(clients_.begin(), clients_.end(),
                                  [raw](const auto& c) { return c.get() == raw; }),
                   clients_.end());
  });
  clients_.push_back(std::move(client));
  if (!keepAliveTimer_->armed()) keepAliveTimer_->armAt(clock_.now() + keepAliveInterval_);
}

void JsonEventStream::publish(const std::string& json) {
  if (json == lastSent_) return;
  lastSent_ = json;
  for (auto& c : std::vector(clients_))
    c->send(json);
}

void JsonEventStream::keepAlive() {
  for (auto& c : std::vector(clients_))
    c->comment("keep-alive");
  if (!clients_.empty()) keepAliveTimer_->armAt(clock_.now() + keepAliveInterval_);
}

void JsonEventStream::closeAll() {
  auto clients = std::move(clients_);
  clients_.clear();
  for (auto& c : clients)
    c->close();
  keepAliveTimer_->disarm();
}

}  // namespace leasehold::publish
