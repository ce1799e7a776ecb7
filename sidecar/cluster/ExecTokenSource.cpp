#include "cluster/ExecTokenSource.h"

#include <cassert>
#include <utility>

#include "cluster/AsyncProcessLauncher.h"
#include "runtime/AsioClock.h"

namespace leasehold::cluster {

// The production binding: a clock and a process launcher on the loop, for as long as some
// client on that loop holds it. Its end unbinds the source (the plugin is killed, waiters are
// dropped), so nothing of the loop is touched after the loop is gone.
class ExecTokenSource::LoopAttachment {
 public:
  LoopAttachment(boost::asio::io_context& io, ExecTokenSource& source)
      : io(io), clock(io, 1.0), launcher(io), source(&source) {}
  ~LoopAttachment() {
    if (source) source->detach();
  }
  LoopAttachment(const LoopAttachment&) = delete;
  LoopAttachment& operator=(const LoopAttachment&) = delete;

  boost::asio::io_context& io;
  runtime::AsioClock clock;  // real time: the plugin's deadline is not a test hook's business
  AsyncProcessLauncher launcher;
  ExecTokenSource* source;  // null once the source is gone first
};

ExecTokenSource::ExecTokenSource(ExecCredentialPlugin plugin, WallClock clock)
    : plugin_(std::move(plugin)), wallClock_(clock ? std::move(clock) : defaultWallClock) {}

ExecTokenSource::ExecTokenSource(ExecCredentialPlugin plugin, time::Clock& clock,
                                 ProcessLauncher& launcher)
    : plugin_(std::move(plugin)),
      wallClock_([&clock] { return clock.wallNow(); }),
      clock_(&clock),
      launcher_(&launcher) {}

ExecTokenSource::~ExecTokenSource() {
  if (auto attachment = attachment_.lock()) attachment->source = nullptr;
}

time::WallTime ExecTokenSource::defaultWallClock() {
  return std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now());
}

std::shared_ptr<void> ExecTokenSource::attach(boost::asio::io_context& io) {
  if (auto existing = attachment_.lock()) {
    assert(&existing->io == &io && "one event loop per process");
    return existing;  // the event client and the lease client share one source
  }
  if (clock_) return nullptr;  // constructed with its own clock and launcher
  auto attachment = std::make_shared<LoopAttachment>(io, *this);
  clock_ = &attachment->clock;
  launcher_ = &attachment->launcher;
  attachment_ = attachment;
  return attachment;
}

void ExecTokenSource::detach() {
  running_.reset();
  deadline_.reset();
  waiters_.clear();
  clock_ = nullptr;
  launcher_ = nullptr;
  attachment_.reset();
}

time::Duration ExecTokenSource::refreshLead(time::Duration lifetime) const {
  const time::Duration slowRun = plugin_.timeout() + std::chrono::seconds(1);
  return std::min(lifetime / 2, std::max(lifetime / 4, slowRun));
}

bool ExecTokenSource::usable(time::WallTime now) {
  if (cached_ && cached_->credential.expiration && now >= *cached_->credential.expiration) {
    cached_.reset();
  }
  return cached_.has_value();
}

bool ExecTokenSource::backingOff(time::WallTime now) const {
  return lastFailure_ && now >= *lastFailure_ && now - *lastFailure_ < kRetryAfterFailure;
}

TokenResult ExecTokenSource::token() {
  TokenResult result;
  const auto now = wallClock_();
  if (usable(now)) {
    // Due for a refresh: it runs in the background while this credential is still sent.
    if (cached_->refreshAt && now >= *cached_->refreshAt) startRefresh(now);
    result.token = cached_->credential.token;
    result.clientCertificate = certificate_;
  } else {
    // The previous credential has expired or was rejected: sending it would only earn a 401.
    startRefresh(now);
  }
  result.warning = std::exchange(unreportedWarning_, std::nullopt);
  return result;
}

void ExecTokenSource::whenUsable(time::Duration maxWait, std::function<void(TokenWait)> ready) {
  const auto now = wallClock_();
  if (usable(now) || !startRefresh(now)) {
    ready(TokenWait{});  // a credential, or nothing to wait for (token() says why)
    return;
  }
  Waiter& waiter = waiters_.emplace_back();
  waiter.ready = std::move(ready);
  waiter.since = clock_->now();
  // The entry stays in the list until the refresh ends (the timer must not be destroyed while
  // it fires), which the plugin's deadline bounds.
  waiter.timer = clock_->makeTimer([this, entry = &waiter, maxWait] {
    if (!entry->ready) return;
    auto answer = std::move(entry->ready);
    entry->ready = nullptr;
    answer(TokenWait{describe() + ": no credential within " + time::formatDuration(maxWait) +
                         " (the plugin is still running)",
                     clock_->now() - entry->since});
  });
  waiter.timer->armAt(waiter.since + maxWait);
}

bool ExecTokenSource::startRefresh(time::WallTime now) {
  if (running_) return true;
  if (backingOff(now)) return false;
  if (!clock_ || !launcher_) {
    fail(describe() + ": cannot run: not attached to the event loop");
    return false;
  }
  auto spec = plugin_.processSpec();
  if (!spec) {
    fail(spec.message());
    return false;
  }
  if (!deadline_) deadline_ = clock_->makeTimer([this] { deadlinePassed(); });
  deadline_->armAt(clock_->now() + plugin_.timeout());
  running_ = launcher_->start(std::move(spec).value(), [this](ProcessExit exit) {
    const auto process = std::move(running_);
    deadline_->disarm();
    refreshEnded(plugin_.interpret(exit, false));
  });
  return true;
}

void ExecTokenSource::deadlinePassed() {
  // Dropping the handle kills the plugin's process group; it is reaped in the background, and
  // a process that cannot even die (stuck in the kernel) does not hold up the next refresh.
  if (!running_) return;
  running_.reset();
  refreshEnded(plugin_.interpret(ProcessExit{}, true));
}

void ExecTokenSource::refreshEnded(LoadResult<ExecCredential> result) {
  const auto now = wallClock_();
  if (!result) {
    fail(result.message());  // a credential still valid stays in use
  } else if (result->expiration && now >= *result->expiration) {
    fail(describe() + ": the credential it returned expired at " +
         time::formatMicroTime(*result->expiration));
  } else {
    lastFailure_.reset();
    ExecCredential credential = std::move(result).value();
    if (credential.clientCertificatePem.empty()) {
      certificate_.reset();
    } else if (!certificate_ || certificate_->certificatePem != credential.clientCertificatePem ||
               certificate_->keyPem != credential.clientKeyPem) {
      // A new object only when it changed: the client rebuilds its TLS context on a new one.
      certificate_ = std::make_shared<const ClientCertificate>(
          ClientCertificate{credential.clientCertificatePem, credential.clientKeyPem});
    }
    Cached cached{std::move(credential), std::nullopt};
    if (const auto& expiry = cached.credential.expiration) {
      const auto lead = refreshLead(*expiry - now);
      cached.refreshAt = *expiry - std::chrono::duration_cast<std::chrono::microseconds>(lead);
    }
    cached_ = std::move(cached);
  }
  answerWaiters();
}

void ExecTokenSource::fail(std::string message) {
  lastFailure_ = wallClock_();
  unreportedWarning_ = std::move(message);
}

void ExecTokenSource::answerWaiters() {
  // Moved out first: an answer may start the next request, which may wait again.
  auto waiting = std::exchange(waiters_, {});
  const auto now = clock_->now();
  for (auto& waiter : waiting) {
    if (!waiter.ready) continue;
    waiter.timer->disarm();
    auto answer = std::move(waiter.ready);
    waiter.ready = nullptr;
    answer(TokenWait{std::nullopt, now - waiter.since});
  }
}

}  // namespace leasehold::cluster
