#include "kube/LeaseWatch.h"

#include <algorithm>

#include "kube/LeaseClient.h"
#include "kube/LeaseCodec.h"

namespace leasehold::kube {

namespace {
constexpr std::chrono::milliseconds kMaxBackoff{30000};
constexpr std::chrono::milliseconds kForbiddenRetry{60000};
}  // namespace

LeaseWatch::LeaseWatch(ApiTransport& api, time::Clock& clock, const LeaseClient& lease,
                       election::LeaseObserver& observer, const LeaseClientOptions& options,
                       std::function<double()> random01)
    : api_(api),
      clock_(clock),
      lease_(lease),
      observer_(observer),
      timeoutSeconds_(options.watchTimeoutSeconds),
      deadline_(options.requestDeadline),
      random01_(std::move(random01)),
      onProblem_(options.onWatchProblem),
      splitter_(1024 * 1024) {
  retryTimer_ = clock_.makeTimer([this] {
    if (relistNext_) {
      list();
    } else {
      watchFrom(resourceVersion_);
    }
  });
}

LeaseWatch::~LeaseWatch() {
  if (stream_) stream_->cancel();
}

void LeaseWatch::start() {
  list();
}

void LeaseWatch::setHealthy(bool healthy, const std::string& why) {
  if (healthy == healthy_ && reportedOnce_) return;
  const bool wasReported = reportedOnce_;
  healthy_ = healthy;
  reportedOnce_ = true;
  if (onProblem_ && (!healthy || wasReported)) {
    onProblem_(healthy ? "watch restored" : "watch unavailable, polling instead: " + why);
  }
  observer_.onWatchStateChanged(healthy);
}

// A first failure of a watch that was working is resumed at once; anything else backs off.
void LeaseWatch::failed(const std::string& why, bool relist) {
  if (failures_++ == 0 && healthy_) {
    lastError_ = why;
    if (stream_) {
      stream_->cancel();
      stream_.reset();
    }
    if (relist) return list();
    return watchFrom(resourceVersion_);
  }
  retryLater(why, relist);
}

void LeaseWatch::retryLater(const std::string& why, bool relist) {
  lastError_ = why;
  if (stream_) {
    stream_->cancel();
    stream_.reset();
  }
  setHealthy(false, why);
  relistNext_ = relist;
  retryTimer_->armAt(clock_.now() + backoff_);
  backoff_ = std::clamp(backoff_ * 2, std::chrono::milliseconds(500), kMaxBackoff);
}

void LeaseWatch::list() {
  std::weak_ptr<char> alive = alive_;
  const std::string path =
      lease_.collectionPath() + "?fieldSelector=metadata.name%3D" + lease_.target().name;
  api_.call({"list", "GET", path, "", "application/json", deadline_}, [this, alive](ApiResponse r) {
    if (alive.expired()) return;
    if (!r.ok()) {
      const bool denied = r.code == 401 || r.code == 403;
      if (denied) backoff_ = std::max(backoff_, kForbiddenRetry);
      return retryLater("list: " + r.describe(), true);
    }
    LeaseListResult result;
    std::string error;
    if (!decodeLeaseList(r.body, lease_.target().name, result, error)) {
      return retryLater("list: " + error, true);
    }
    resourceVersion_ = result.resourceVersion;
    justListed_ = true;
    observer_.onLeaseObserved(result.item);
    watchFrom(resourceVersion_);
  });
}

void LeaseWatch::watchFrom(const std::string& rv) {
  std::weak_ptr<char> alive = alive_;
  // client-go spreads watch ends over [min, 2*min) so replicas do not re-watch in step.
  const int timeout =
      timeoutSeconds_ + static_cast<int>(random01_() * static_cast<double>(timeoutSeconds_));
  const std::string path = lease_.collectionPath() + "?allowWatchBookmarks=true" +
                           "&fieldSelector=metadata.name%3D" + lease_.target().name +
                           "&resourceVersion=" + rv + "&timeoutSeconds=" + std::to_string(timeout) +
                           "&watch=true";
  splitter_.reset();
  ApiStreamCallbacks cb;
  cb.onStatus = [this, alive](int status, const std::string& body) {
    if (alive.expired()) return;
    stream_.reset();
    ApiResponse r;
    r.code = status;
    ApiStatus s;
    if (decodeStatus(body, s)) r.status = s;
    if (status == 410) {
      // Plain 410: our resourceVersion is older than the server keeps. Re-list at once.
      return list();
    }
    if (status == 401 || status == 403) backoff_ = std::max(backoff_, kForbiddenRetry);
    retryLater("watch: " + r.describe(), true);
  };
  // The watch is healthy once the server accepted it: the first event may take minutes.
  cb.onOpen = [this, alive] {
    if (!alive.expired()) setHealthy(true, "");
  };
  cb.onData = [this, alive](std::string_view bytes) {
    if (alive.expired()) return;
    if (!splitter_.feed(bytes, [this](std::string_view line) { onLine(line); })) {
      retryLater("watch: line too long", true);
    }
  };
  cb.onEnd = [this, alive](std::optional<std::string> error) {
    if (alive.expired()) return;
    stream_.reset();
    if (error) return failed("watch ended: " + *error, false);
    // timeoutSeconds passed: a clean end. Resume where we were, at once.
    failures_ = 0;
    watchFrom(resourceVersion_);
  };
  stream_ = api_.stream({"watch", "GET", path, "", "application/json", deadline_}, std::move(cb),
                        std::chrono::seconds(timeout + 30));
}

void LeaseWatch::onLine(std::string_view line) {
  if (line.empty() || !stream_) return;  // !stream_: a line after we gave up on this stream
  WatchEvent e;
  std::string error;
  if (!decodeWatchEvent(line, e, error)) return retryLater("watch: " + error, true);
  switch (e.type) {
    case WatchEvent::Type::kError:
      // 410 Expired/Gone: our resourceVersion is too old. Re-list at once (a normal event, not
      // a failure); anything else: a failure, then re-list.
      if (e.status && e.status->code == 410 && !justListed_) {
        stream_->cancel();
        stream_.reset();
        return list();
      }
      return failed("watch error: " + (e.status ? e.status->message : ""), true);
    case WatchEvent::Type::kBookmark:
      if (!e.resourceVersion.empty()) resourceVersion_ = e.resourceVersion;
      return;
    case WatchEvent::Type::kDeleted:
      resourceVersion_ = e.resourceVersion;
      backoff_ = std::chrono::milliseconds(500);
      failures_ = 0;
      justListed_ = false;
      return observer_.onLeaseObserved(std::nullopt);
    case WatchEvent::Type::kAdded:
    case WatchEvent::Type::kModified:
      resourceVersion_ = e.resourceVersion;
      backoff_ = std::chrono::milliseconds(500);
      failures_ = 0;
      justListed_ = false;
      return observer_.onLeaseObserved(e.lease);
  }
}

}  // namespace leasehold::kube
