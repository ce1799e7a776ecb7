#pragma once
// One ZooKeeper session for several users (shard mode: the group's reads, its membership and
// one ZkCampaign per shard; docs/design.md "Shards on ZooKeeper"). ZkClient has one session
// handler and one open(): ZkSharedSession takes both, and hands out views (share()), each a
// ZkClient of its own whose requests go straight to the shared client and whose session handler
// hears every session event of the shared one.
//
// - open() on a view opens the shared client the first time only; a view opened while the
//   session is connected hears that kConnected (the last one, as it came) on the event loop,
//   as a campaign started late would have heard it.
// - close() on a view only detaches it (done runs on the event loop): the session is the
//   process's, closed by whoever owns the shared client, after every user stopped.
// - A view must not outlive its ZkSharedSession; the shared client must outlive both.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "time/Clock.h"
#include "zookeeper/ZkClient.h"

namespace leasehold::zookeeper {

class ZkSharedSession {
 public:
  ZkSharedSession(time::Clock& clock, ZkClient& zk);
  ~ZkSharedSession();
  ZkSharedSession(const ZkSharedSession&) = delete;
  ZkSharedSession& operator=(const ZkSharedSession&) = delete;

  std::unique_ptr<ZkClient> share();
  ZkClient& client() { return zk_; }

 private:
  class View;
  void onSession(const ZkSessionEvent& e);
  void openOnce();

  time::Clock& clock_;
  ZkClient& zk_;
  std::vector<View*> views_;
  std::optional<ZkSessionEvent> connected_;  // the last kConnected, while connected
  bool opened_ = false;
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace leasehold::zookeeper
