// zookeeper::ZkCampaign, the Candidacy on ZooKeeper, passes the Candidacy contract
// (tests/unit/support/CandidacyContract.h) on MemoryZooKeeper: one tree, one
// MemoryZooKeeper::Client per candidate (its session and connection, which can be cut alone).
#include <map>

#include "CandidacyContract.h"
#include "MemoryZooKeeper.h"
#include "zookeeper/ZkCampaign.h"

namespace leasehold::election::contract {
namespace zk_campaign {

class InMemoryZooKeeper {
 public:
  explicit InMemoryZooKeeper(time::FakeClock& clock) : clock_(clock), zk_(clock) {}

  ElectionTimings timings() const { return zookeeper::test::testTimings(); }
  std::unique_ptr<Candidacy> candidacy(const std::string& identity) {
    auto& client = clients_[identity];
    client = std::make_unique<zookeeper::test::MemoryZooKeeper::Client>(zk_);
    return std::make_unique<zookeeper::ZkCampaign>(
        clock_, *client,
        zookeeper::ZkCampaignConfig{identity, "/leasehold/contract", timings(),
                                    zookeeper::test::testServerLag()});
  }
  void setReachable(const std::string& identity, bool reachable) {
    clients_.at(identity)->setReachable(reachable);
  }
  // A NoAuth answer to its first request (creating the election's path): an ACL that does not
  // let this user in.
  void refuseFirstRequest(const std::string& identity) {
    zookeeper::ZkResult denied;
    denied.kind = zookeeper::ZkResult::Kind::kDenied;
    denied.code = zookeeper::ZkCode::kNoAuth;
    denied.message = "memory:2181 answered NoAuth (code -102)";
    clients_.at(identity)->failNext("", denied);
  }
  // ZooKeeper's queue has no way to name the next holder: handOver() is tested alone.
  bool requestHandover(const std::string&) { return false; }

 private:
  time::FakeClock& clock_;
  zookeeper::test::MemoryZooKeeper zk_;
  std::map<std::string, std::unique_ptr<zookeeper::test::MemoryZooKeeper::Client>> clients_;
};

}  // namespace zk_campaign

INSTANTIATE_TYPED_TEST_SUITE_P(ZooKeeper, CandidacyContract,
                               ::testing::Types<zk_campaign::InMemoryZooKeeper>);

}  // namespace leasehold::election::contract
