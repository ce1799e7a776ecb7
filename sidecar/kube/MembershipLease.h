#pragma once
// This member's membership Lease (GroupLayout::memberLease): holderIdentity = the identity,
// leaseDurationSeconds = its duration, written every `period` (slower than the shards'
// renewals) so that the others see it change; deleted on the way out so they stop counting it
// at once. Writes are compare-and-swap like every Lease write (a lost race re-reads first).
// Nothing here decides anything: the others judge it live on their own clocks (GroupView).
#include <functional>
#include <memory>
#include <optional>

#include "election/lease/LeaseStore.h"
#include "kube/ApiTransport.h"
#include "kube/LeaseClient.h"
#include "time/Clock.h"

namespace leasehold::kube {

struct MembershipLeaseOptions {
  std::string identity;
  time::Duration duration = std::chrono::seconds(15);
  time::Duration period = std::chrono::seconds(5);
  std::function<void(const std::string&)> onProblem;  // a failing write, for the log
};

class MembershipLease {
 public:
  // `lease` reaches GROUP-member-<hash> with the group's label on every write.
  MembershipLease(time::Clock& clock, std::unique_ptr<LeaseClient> lease, ApiTransport& api,
                  MembershipLeaseOptions options);
  ~MembershipLease();
  MembershipLease(const MembershipLease&) = delete;
  MembershipLease& operator=(const MembershipLease&) = delete;

  void start();
  // Stops renewing and deletes the Lease; done runs on the answer (or its failure).
  void remove(std::function<void()> done);

 private:
  void write();
  void onAnswer(election::StoreResult r);
  void retrySoon(const std::string& why);

  time::Clock& clock_;
  std::unique_ptr<LeaseClient> lease_;
  ApiTransport& api_;
  MembershipLeaseOptions options_;
  std::unique_ptr<time::Timer> timer_;
  std::optional<election::LeaseRecord> last_;
  bool inflight_ = false;
  bool removing_ = false;
  std::string problem_;
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace leasehold::kube
