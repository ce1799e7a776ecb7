// etcd::EtcdCampaign, the Candidacy on etcd, passes the Candidacy contract
// (tests/unit/support/CandidacyContract.h) on MemoryEtcd: one store, one MemoryEtcd::Link per
// candidate (its connection, which can be cut alone).
#include <map>

#include "CandidacyContract.h"
#include "MemoryEtcd.h"
#include "etcd/EtcdCampaign.h"

namespace leasehold::election::contract {
namespace etcd_campaign {

class InMemoryEtcd {
 public:
  explicit InMemoryEtcd(time::FakeClock& clock) : clock_(clock), etcd_(clock) {}

  ElectionTimings timings() const { return etcd::test::testTimings(); }
  std::unique_ptr<Candidacy> candidacy(const std::string& identity) {
    auto& link = links_[identity];
    link = std::make_unique<etcd::test::MemoryEtcd::Link>(etcd_);
    return std::make_unique<etcd::EtcdCampaign>(
        clock_, *link, etcd::EtcdCampaignConfig{identity, "contract", timings()});
  }
  void setReachable(const std::string& identity, bool reachable) {
    links_.at(identity)->setReachable(reachable);
  }
  // A permission error on its first request (the lease grant): a role without the prefix. The
  // fake refuses the next grant of anybody; the suite starts nobody else meanwhile.
  void refuseFirstRequest(const std::string&) {
    etcd::EtcdReply denied;
    denied.kind = etcd::EtcdReply::Kind::kDenied;
    denied.code = etcd::kCodePermissionDenied;
    denied.message = "memory answered 403: etcdserver: permission denied (code 7)";
    etcd_.failNext("lease/grant", denied);
  }
  // etcd's queue has no way to name the next holder: handOver() is tested alone.
  bool requestHandover(const std::string&) { return false; }

 private:
  time::FakeClock& clock_;
  etcd::test::MemoryEtcd etcd_;
  std::map<std::string, std::unique_ptr<etcd::test::MemoryEtcd::Link>> links_;
};

}  // namespace etcd_campaign

INSTANTIATE_TYPED_TEST_SUITE_P(Etcd, CandidacyContract,
                               ::testing::Types<etcd_campaign::InMemoryEtcd>);

}  // namespace leasehold::election::contract
