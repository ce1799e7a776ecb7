#pragma once
// Credentials from a client-go exec plugin, run in the background on the event loop: nothing
// here waits for the plugin, so a slow plugin cannot delay a renewal.
//
// - The credential is cached until the expirationTimestamp the plugin gave, or until
//   invalidate() (a 401).
// - A refresh starts before the credential expires (refreshLead()), and requests go on using the
//   current credential while it runs. Only when there is no usable credential at all (the first
//   run, after a 401, or past the expiry) does whenUsable() make a request wait for the refresh,
//   and never past the request's own deadline.
// - The plugin gets ExecCredentialPlugin::timeout() (10 s): then its process group is killed on
//   the Clock, and the run has failed. A failed run is not repeated for kRetryAfterFailure, so a
//   broken plugin is not started on every request; its message is reported once, as a warning.
//
// Production: constructed by the kubeconfig loader, bound to the loop by attach() (ApiClient
// calls it). Tests: the second constructor, on a FakeClock and a fake launcher.
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <string>

#include "cluster/ExecCredentialPlugin.h"
#include "cluster/ProcessLauncher.h"
#include "cluster/TokenSource.h"
#include "time/Clock.h"
#include "time/Time.h"

namespace leasehold::cluster {

class ExecTokenSource : public TokenSource {
 public:
  // Wall time, because the plugin's expiry is a wall-clock timestamp.
  using WallClock = std::function<time::WallTime()>;

  static constexpr time::Duration kRetryAfterFailure = std::chrono::seconds(5);

  // Not yet able to run the plugin: attach() gives it the loop. An empty `clock` means
  // defaultWallClock.
  explicit ExecTokenSource(ExecCredentialPlugin plugin, WallClock clock = defaultWallClock);
  // Runs the plugin through `launcher`, with timers (and wall time) from `clock`. Both must
  // outlive the source.
  ExecTokenSource(ExecCredentialPlugin plugin, time::Clock& clock, ProcessLauncher& launcher);
  ~ExecTokenSource() override;
  ExecTokenSource(const ExecTokenSource&) = delete;
  ExecTokenSource& operator=(const ExecTokenSource&) = delete;

  // The current credential, if it is still valid; starts a refresh when one is due (then no
  // token, with the failure once as a warning, if the plugin cannot run or keeps failing).
  TokenResult token() override;
  void whenUsable(time::Duration maxWait, std::function<void(TokenWait)> ready) override;
  void invalidate() override { cached_.reset(); }
  std::shared_ptr<void> attach(boost::asio::io_context& io) override;
  std::string describe() const override { return plugin_.describe(); }

  // How long before its expiry a credential that lived `lifetime` is refreshed: a quarter of its
  // life, at least the plugin's timeout plus a second (a slow run still ends before the expiry),
  // but never more than half of it (a short-lived credential is not refreshed continuously).
  time::Duration refreshLead(time::Duration lifetime) const;

  // True while the plugin runs.
  bool refreshing() const { return running_ != nullptr; }

  static time::WallTime defaultWallClock();

 private:
  class LoopAttachment;
  struct Waiter {
    std::function<void(TokenWait)> ready;  // empty once answered
    time::MonoTime since;
    std::unique_ptr<time::Timer> timer;
  };
  struct Cached {
    ExecCredential credential;
    std::optional<time::WallTime> refreshAt;  // none: valid until a 401
  };

  bool usable(time::WallTime now);  // drops an expired credential
  bool backingOff(time::WallTime now) const;
  // Starts the plugin unless it runs already or just failed; false when it is not running.
  bool startRefresh(time::WallTime now);
  void refreshEnded(LoadResult<ExecCredential> result);
  void deadlinePassed();
  void fail(std::string message);
  void answerWaiters();
  void detach();

  ExecCredentialPlugin plugin_;
  WallClock wallClock_;
  time::Clock* clock_ = nullptr;              // null until attached
  ProcessLauncher* launcher_ = nullptr;       // null until attached
  std::weak_ptr<LoopAttachment> attachment_;  // the production binding, while it lives
  std::optional<Cached> cached_;
  std::shared_ptr<const ClientCertificate> certificate_;
  std::optional<time::WallTime> lastFailure_;
  std::optional<std::string> unreportedWarning_;
  std::unique_ptr<RunningProcess> running_;
  std::unique_ptr<time::Timer> deadline_;
  std::list<Waiter> waiters_;
};

}  // namespace leasehold::cluster
