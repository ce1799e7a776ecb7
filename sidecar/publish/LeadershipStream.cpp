#include "publish/LeadershipStream.h"

#include <algorithm>

namespace leasehold::publish {

LeadershipStream::LeadershipStream(time::Clock& clock, LeaseName lease,
                                   std::function<election::Leadership()> leadership,
                                   Options options)
    : clock_(clock),
      lease_(std::move(lease)),
      leadership_(std::move(leadership)),
      options_(options),
      keepAliveTimer_(clock.makeTimer([this] { keepAlive(); })),
      expiryTimer_(clock.makeTimer([this] { update(); })) {}

LeadershipStream::~LeadershipStream() = default;

bool LeadershipStream::sameForWatchers(const election::Leadership& a,
                                       const election::Leadership& b) {
  return a.leader == b.leader && a.identity == b.identity && a.holder == b.holder &&
         a.holderPod == b.holderPod && a.holderAddress == b.holderAddress &&
         a.fencingToken == b.fencingToken && a.acquireTime == b.acquireTime;
}

void LeadershipStream::add(std::shared_ptr<net::EventStream> client) {
  if (!client || client->closed()) return;
  // Existing clients first hear of any change not published yet, so that everybody's next
  // event is relative to the same last state.
  update();
  if (!client->send(leadershipJson(leadership_(), lease_))) return;
  std::weak_ptr<char> alive = alive_;
  const net::EventStream* key = client.get();
  client->onClose([this, alive, key] {
    if (!alive.expired()) forget(key);
  });
  clients_.push_back(std::move(client));
  if (!keepAliveTimer_->armed()) keepAliveTimer_->armAt(clock_.now() + options_.keepAliveInterval);
}

void LeadershipStream::update() {
  const election::Leadership now = leadership_();
  armExpiry(now);
  if (lastSent_ && sameForWatchers(*lastSent_, now)) return;
  lastSent_ = now;
  if (!clients_.empty()) sendToAll(leadershipJson(now, lease_));
}

void LeadershipStream::armExpiry(const election::Leadership& now) {
  if (now.leader && now.validUntilMono) {
    expiryTimer_->armAt(*now.validUntilMono);
  } else {
    expiryTimer_->disarm();
  }
}

void LeadershipStream::sendToAll(const std::string& json) {
  // A false send means the client is gone or was just dropped for not reading: forget it.
  std::erase_if(clients_, [&](const std::shared_ptr<net::EventStream>& c) {
    return c->closed() || !c->send(json);
  });
}

void LeadershipStream::keepAlive() {
  std::erase_if(clients_, [](const std::shared_ptr<net::EventStream>& c) {
    return c->closed() || !c->comment("keep-alive");
  });
  if (!clients_.empty()) keepAliveTimer_->armAt(clock_.now() + options_.keepAliveInterval);
}

void LeadershipStream::forget(const net::EventStream* client) {
  std::erase_if(clients_,
                [client](const std::shared_ptr<net::EventStream>& c) { return c.get() == client; });
  if (clients_.empty()) keepAliveTimer_->disarm();
}

void LeadershipStream::closeAll() {
  auto clients = std::move(clients_);
  clients_.clear();
  for (auto& c : clients)
    c->close();
  keepAliveTimer_->disarm();
  expiryTimer_->disarm();
}

}  // namespace leasehold::publish
