#include "kube/ListWatchLoop.h"

#include <algorithm>

namespace leasehold::kube {

namespace {
constexpr std::chrono::milliseconds kMinBackoff{500};
constexpr std::chrono::milliseconds kMaxBackoff{30000};
constexpr std::chrono::milliseconds kFirstRefusedRetry{1000};
constexpr std::chrono::milliseconds kMaxRefusedRetry{60000};
}  // namespace

ListWatchLoop::ListWatchLoop(ApiTransport& api, time::Clock& clock, ListWatchLoopOptions options,
                             ListWatchLoopCallbacks callbacks, std::function<double()> random01)
    : api_(api),
      clock_(clock),
      options_(std::move(options)),
      callbacks_(std::move(callbacks)),
      random01_(std::move(random01)),
      splitter_(1024 * 1024) {
  retryTimer_ = clock_.makeTimer([this] {
    if (relistNext_) {
      list();
    } else {
      watchFrom(resourceVersion_);
    }
  });
}

ListWatchLoop::~ListWatchLoop() {
  if (stream_) stream_->cancel();
}

void ListWatchLoop::start() {
  stopped_ = false;
  list();
}

void ListWatchLoop::stop() {
  stopped_ = true;
  retryTimer_->disarm();
  if (stream_) stream_->cancel();
  stream_.reset();
}

void ListWatchLoop::setHealthy(bool healthy, const std::string& why) {
  if (healthy == healthy_ && reportedOnce_) return;
  const bool wasReported = reportedOnce_;
  healthy_ = healthy;
  reportedOnce_ = true;
  if (options_.onProblem && (!healthy || wasReported)) {
    options_.onProblem(healthy ? options_.subject + " restored"
                               : options_.subject + " unavailable, " + options_.whileUnavailable +
                                     ": " + why);
  }
  callbacks_.onHealth(healthy);
}

// A first failure of a watch that was working is resumed at once; anything else backs off.
void ListWatchLoop::failed(const std::string& why, bool relist) {
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

void ListWatchLoop::retryLater(const std::string& why, bool relist) {
  lastError_ = why;
  if (stream_) {
    stream_->cancel();
    stream_.reset();
  }
  if (stopped_) return;
  setHealthy(false, why);
  relistNext_ = relist;
  retryTimer_->armAt(clock_.now() + backoff_);
  backoff_ = std::clamp(backoff_ * 2, kMinBackoff, kMaxBackoff);
}

void ListWatchLoop::refused() {
  backoff_ = std::max(backoff_, refusedBackoff_);
  refusedBackoff_ = std::min(refusedBackoff_ * 2, kMaxRefusedRetry);
}

void ListWatchLoop::list() {
  if (stopped_) return;
  std::weak_ptr<char> alive = alive_;
  api_.call({"list", "GET", options_.collectionPath + "?" + options_.selector, "",
             "application/json", options_.requestDeadline},
            [this, alive](ApiResponse r) {
              if (alive.expired() || stopped_) return;
              if (!r.ok()) {
                if (r.code == 401 || r.code == 403) refused();
                return retryLater("list: " + r.describe(), true);
              }
              std::string error;
              if (!callbacks_.onList(r.body, resourceVersion_, error)) {
                return retryLater("list: " + error, true);
              }
              justListed_ = true;
              watchFrom(resourceVersion_);
            });
}

void ListWatchLoop::watchFrom(const std::string& rv) {
  if (stopped_) return;
  std::weak_ptr<char> alive = alive_;
  // client-go spreads watch ends over [min, 2*min) so replicas do not re-watch in step.
  const int base = options_.watchTimeoutSeconds;
  const int timeout = base + static_cast<int>(random01_() * static_cast<double>(base));
  const std::string path = options_.collectionPath + "?allowWatchBookmarks=true&" +
                           options_.selector + "&resourceVersion=" + rv +
                           "&timeoutSeconds=" + std::to_string(timeout) + "&watch=true";
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
    if (status == 401 || status == 403) refused();
    retryLater("watch: " + r.describe(), true);
  };
  // The watch is healthy once the server accepted it: the first event may take minutes.
  cb.onOpen = [this, alive] {
    if (alive.expired()) return;
    refusedBackoff_ = kFirstRefusedRetry;
    setHealthy(true, "");
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
  stream_ = api_.stream({"watch", "GET", path, "", "application/json", options_.requestDeadline},
                        std::move(cb), std::chrono::seconds(timeout + 30));
}

void ListWatchLoop::onLine(std::string_view line) {
  if (line.empty() || !stream_) return;  // !stream_: a line after we gave up on this stream
  WatchEvent e;
  std::string error;
  if (!decodeWatchEvent(line, e, error, options_.objects))
    return retryLater("watch: " + error, true);
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
    case WatchEvent::Type::kAdded:
    case WatchEvent::Type::kModified:
      resourceVersion_ = e.resourceVersion;
      backoff_ = kMinBackoff;
      failures_ = 0;
      justListed_ = false;
      return callbacks_.onEvent(e);
  }
}

}  // namespace leasehold::kube
