#include "kube/HolderPodWatch.h"

namespace leasehold::kube {

HolderPodWatch::HolderPodWatch(ApiTransport& api, time::Clock& clock, HolderPodWatchOptions options,
                               std::function<double()> random01)
    : api_(api),
      clock_(clock),
      options_(std::move(options)),
      random01_(std::move(random01)),
      judgeTimer_(clock.makeTimer([this] { judge(); })) {}

HolderPodWatch::~HolderPodWatch() = default;

void HolderPodWatch::follow(const election::LeaseRecord& record,
                            std::function<void(std::string proof)> exited) {
  record_ = record;
  exited_ = std::move(exited);
  const auto holder = parseHolderProcess(record.holderProcess);
  if (!holder || !isPodName(record.holderPod) || holder->identity != record.holderIdentity) {
    // Nothing to watch: the rule says why, once.
    loop_.reset();
    podName_.clear();
    podKnown_ = false;
    pod_.reset();
  } else if (record.holderPod != podName_) {
    watchPod(record.holderPod);
  }
  judgeTimer_->armAt(clock_.now());
}

void HolderPodWatch::unfollow() {
  record_.reset();
  exited_ = nullptr;
  judgeTimer_->disarm();
  loop_.reset();
  podName_.clear();
  podKnown_ = false;
  pod_.reset();
  lastWhy_.clear();
}

void HolderPodWatch::watchPod(const std::string& name) {
  podName_ = name;
  podKnown_ = false;
  pod_.reset();
  ListWatchLoopOptions o;
  o.collectionPath = "/api/v1/namespaces/" + options_.podNamespace + "/pods";
  // isPodName (follow): nothing in it to escape.
  o.selector = "fieldSelector=metadata.name%3D" + name;
  o.subject = "the holder's pod watch (--fast-failover)";
  o.whileUnavailable = "the Lease's expiry decides instead";
  o.objects = WatchObjects::kOther;
  o.requestDeadline = options_.requestDeadline;
  o.watchTimeoutSeconds = options_.watchTimeoutSeconds;
  o.onProblem = options_.onProblem;
  ListWatchLoopCallbacks cb;
  cb.onList = [this](const std::string& body, std::string& resourceVersion, std::string& error) {
    std::optional<PodFacts> pod;
    if (!decodePodListFacts(body, pod, resourceVersion, error)) return false;
    podKnown_ = true;
    pod_ = std::move(pod);
    judgeTimer_->armAt(clock_.now());  // not from inside the loop: the proof may end it
    return true;
  };
  cb.onEvent = [this](const WatchEvent& e) {
    if (e.type == WatchEvent::Type::kDeleted) {
      pod_.reset();
    } else {
      PodFacts pod;
      std::string error;
      if (!decodePodFacts(e.object, pod, error)) {
        if (options_.onProblem) options_.onProblem("the holder's pod: " + error);
        return;
      }
      pod_ = std::move(pod);
    }
    judgeTimer_->armAt(clock_.now());
  };
  // Unhealthy: reports may be missed, which only delays a proof (the expiry still decides).
  cb.onHealth = [](bool) {};
  loop_ = std::make_unique<ListWatchLoop>(api_, clock_, std::move(o), std::move(cb), random01_);
  loop_->start();
}

void HolderPodWatch::judge() {
  if (!record_ || !exited_) return;
  // Until the list answered, there is nothing to judge (unless there is nothing to watch).
  if (!podName_.empty() && !podKnown_) return;
  ExitVerdict v = judgeHolderExit(*record_, pod_, options_.self);
  if (!v.proven) {
    if (v.why != lastWhy_ && options_.onVerdict) options_.onVerdict(v.why);
    lastWhy_ = std::move(v.why);
    return;
  }
  lastWhy_.clear();
  if (options_.onProof) options_.onProof(v.why);
  auto exited = std::move(exited_);
  exited_ = nullptr;
  exited(std::move(v.why));
}

}  // namespace leasehold::kube
