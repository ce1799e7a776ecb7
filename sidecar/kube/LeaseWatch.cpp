#include "kube/LeaseWatch.h"

#include "kube/LeaseClient.h"
#include "kube/LeaseCodec.h"

namespace leasehold::kube {

namespace {

ListWatchLoopOptions loopOptions(const LeaseClient& lease, const LeaseClientOptions& options) {
  ListWatchLoopOptions o;
  o.collectionPath = lease.collectionPath();
  o.selector = "fieldSelector=metadata.name%3D" + lease.target().name;
  o.subject = "watch";
  o.requestDeadline = options.requestDeadline;
  o.watchTimeoutSeconds = options.watchTimeoutSeconds;
  o.onProblem = options.onWatchProblem;
  return o;
}

}  // namespace

LeaseWatch::LeaseWatch(ApiTransport& api, time::Clock& clock, const LeaseClient& lease,
                       election::LeaseObserver& observer, const LeaseClientOptions& options,
                       std::function<double()> random01)
    : lease_(lease),
      observer_(observer),
      loop_(api, clock, loopOptions(lease, options),
            {[this](const std::string& body, std::string& resourceVersion, std::string& error) {
               return onList(body, resourceVersion, error);
             },
             [this](const WatchEvent& e) {
               observer_.onLeaseObserved(e.type == WatchEvent::Type::kDeleted ? std::nullopt
                                                                              : e.lease);
             },
             [this](bool healthy) { observer_.onWatchStateChanged(healthy); }},
            std::move(random01)) {}

LeaseWatch::~LeaseWatch() = default;

void LeaseWatch::start() {
  loop_.start();
}

bool LeaseWatch::onList(const std::string& body, std::string& resourceVersion, std::string& error) {
  LeaseListResult result;
  if (!decodeLeaseList(body, lease_.target().name, result, error)) return false;
  resourceVersion = result.resourceVersion;
  observer_.onLeaseObserved(result.item);
  return true;
}

}  // namespace leasehold::kube
