#pragma once
// GET /leader/watch: every client gets the JSON of GET /leader at once, then again on every
// change that matters, and a ": keep-alive" comment every keepAliveInterval.
//
// What counts as a change: leader, holder, name, holderAddress, fencingToken, acquireTime. A
// renewal only moves renewTime and validUntil, so it is NOT an event (the status file gets every
// renewal; a stream client that wants a fresh validUntil can GET /leader). Consequently the
// validUntil inside an event is a snapshot; the stream itself says leader=false when the claim
// ends.
//
// Leadership is computed when asked, so it can end with no API event at all (the renew deadline
// passes). The elector emits kSteppedDown from its own deadline timer, and update() is called on
// every elector event; in addition this class arms a timer for validUntil itself, so an expiry
// is published even if no event reaches it. update() is idempotent: it sends only what differs
// from the last state sent.
//
// Clients never stall anything: net::EventStream buffers are bounded and a client that cannot
// keep up is dropped (its send() returns false) and forgotten here.
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "election/Leadership.h"
#include "net/EventStream.h"
#include "publish/LeadershipJson.h"
#include "time/Clock.h"

namespace leasehold::publish {

class LeadershipStream {
 public:
  struct Options {
    time::Duration keepAliveInterval = std::chrono::seconds(15);
  };

  LeadershipStream(time::Clock& clock, LeaseName lease,
                   std::function<election::Leadership()> leadership, Options options);
  LeadershipStream(time::Clock& clock, LeaseName lease,
                   std::function<election::Leadership()> leadership)
      : LeadershipStream(clock, std::move(lease), std::move(leadership), Options{}) {}
  ~LeadershipStream();
  LeadershipStream(const LeadershipStream&) = delete;
  LeadershipStream& operator=(const LeadershipStream&) = delete;

  // A new client: it gets the current state at once.
  void add(std::shared_ptr<net::EventStream> client);
  // Reads the leadership now and sends it to every client if it changed (see above).
  void update();
  // Closes every client (shutdown).
  void closeAll();

  std::size_t clientCount() const { return clients_.size(); }
  // Whether two states differ in a way stream clients are told about.
  static bool sameForWatchers(const election::Leadership& a, const election::Leadership& b);

 private:
  void sendToAll(const std::string& json);
  void keepAlive();
  void forget(const net::EventStream* client);
  void armExpiry(const election::Leadership& now);

  time::Clock& clock_;
  LeaseName lease_;
  std::function<election::Leadership()> leadership_;
  Options options_;
  std::vector<std::shared_ptr<net::EventStream>> clients_;
  std::optional<election::Leadership> lastSent_;
  std::unique_ptr<time::Timer> keepAliveTimer_;
  std::unique_ptr<time::Timer> expiryTimer_;
  // Guards the clients' onClose callbacks, which may run after this object is gone.
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace leasehold::publish
