#include "kube/LeaseGroupWatch.h"

namespace leasehold::kube {

namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '=') {
      out += "%3D";
    } else if (c == ',') {
      out += "%2C";
    } else if (c == '/') {
      out += "%2F";
    } else {
      out += c;
    }
  }
  return out;
}

ListWatchLoopOptions loopOptions(LeaseGroupWatchOptions options) {
  ListWatchLoopOptions o;
  o.collectionPath = "/apis/coordination.k8s.io/v1/namespaces/" + options.ns + "/leases";
  o.selector = "labelSelector=" + escape(options.labelSelector);
  o.subject = "group watch";
  o.requestDeadline = options.requestDeadline;
  o.watchTimeoutSeconds = options.watchTimeoutSeconds;
  o.onProblem = std::move(options.onProblem);
  return o;
}

}  // namespace

LeaseGroupWatch::LeaseGroupWatch(ApiTransport& api, time::Clock& clock,
                                 LeaseGroupObserver& observer, LeaseGroupWatchOptions options,
                                 std::function<double()> random01)
    : observer_(observer),
      loop_(api, clock, loopOptions(std::move(options)),
            {[this](const std::string& body, std::string& resourceVersion, std::string& error) {
               std::vector<NamedLease> items;
               if (!decodeLeaseListItems(body, resourceVersion, items, error)) return false;
               observer_.onGroupListed(items);
               return true;
             },
             [this](const WatchEvent& e) {
               if (e.type == WatchEvent::Type::kDeleted) {
                 return observer_.onGroupLease(e.name, std::nullopt);
               }
               observer_.onGroupLease(e.name, e.lease);
             },
             [this](bool healthy) { observer_.onGroupWatchState(healthy); }},
            std::move(random01)) {}

LeaseGroupWatch::~LeaseGroupWatch() {
  stop();
}

void LeaseGroupWatch::start() {
  loop_.start();
}

void LeaseGroupWatch::stop() {
  loop_.stop();
}

}  // namespace leasehold::kube
