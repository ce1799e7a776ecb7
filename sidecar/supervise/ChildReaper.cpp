#include "supervise/ChildReaper.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace leasehold::supervise {

ChildReaper::ChildReaper(boost::asio::io_context& io) : sigchld_(io, SIGCHLD), later_(io) {
  if (::getpid() != 1) ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  awaitSignal();
}

ChildReaper::~ChildReaper() {
  boost::system::error_code ignored;
  sigchld_.cancel(ignored);
  later_.cancel();
}

void ChildReaper::watch(pid_t pid, Watch w) {
  watched_[pid] = std::move(w);
}

void ChildReaper::unwatch(pid_t pid) {
  watched_.erase(pid);
}

void ChildReaper::watchGroup(pid_t group) {
  groups_.insert(group);
}

void ChildReaper::unwatchGroup(pid_t group) {
  groups_.erase(group);
}

void ChildReaper::setReapedHandler(const void* owner, std::function<void()> handler) {
  if (handler) {
    reapedHandlers_[owner] = std::move(handler);
  } else {
    reapedHandlers_.erase(owner);
  }
}

void ChildReaper::awaitSignal() {
  sigchld_.async_wait([this](const boost::system::error_code& ec, int) {
    if (ec) return;
    reapNow();
    awaitSignal();
  });
}

void ChildReaper::reap(pid_t pid) {
  auto it = watched_.find(pid);
  if (it != watched_.end() && it->second.whileZombie) {
    auto whileZombie = it->second.whileZombie;
    whileZombie();
  }
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r != pid) return;
  reapedAny_ = true;
  foreign_.erase(pid);
  it = watched_.find(pid);
  if (it == watched_.end()) {
    ++orphansReaped_;
    return;
  }
  auto reaped = std::move(it->second.reaped);
  watched_.erase(it);
  if (reaped) reaped(ExitStatus::fromWaitStatus(status));
}

// Watched pids and watched groups first: those are ours for certain.
void ChildReaper::reapGroups() {
  for (auto it = watched_.begin(); it != watched_.end();) {
    const pid_t pid = (it++)->first;
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid == pid) {
      reap(pid);
      it = watched_.upper_bound(pid);
    }
  }
  const std::set<pid_t> groups = groups_;
  for (pid_t g : groups) {
    for (;;) {
      siginfo_t info{};
      if (::waitid(P_PGID, static_cast<id_t>(g), &info, WEXITED | WNOHANG | WNOWAIT) != 0 ||
          info.si_pid == 0) {
        break;
      }
      reap(info.si_pid);
    }
  }
}

void ChildReaper::reapNow() {
  reapedAny_ = false;
  reapGroups();
  const auto now = std::chrono::steady_clock::now();
  for (;;) {
    siginfo_t info{};
    if (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
      if (errno == EINTR) continue;
      break;  // ECHILD: no children at all
    }
    const pid_t pid = info.si_pid;
    if (pid == 0) break;  // children, but none has exited
    if (!watched_.count(pid)) {
      // Possibly another launcher's child, about to be reaped by it: give it the grace.
      const auto first = foreign_.emplace(pid, now).first->second;
      if (now - first < kForeignGrace) {
        later_.expires_at(first + kForeignGrace);
        later_.async_wait([this](const boost::system::error_code& ec) {
          if (!ec) reapNow();
        });
        break;
      }
    }
    reap(pid);
  }
  // Forget zombies that their owners reaped.
  for (auto it = foreign_.begin(); it != foreign_.end();) {
    it = now - it->second > 10 * kForeignGrace ? foreign_.erase(it) : std::next(it);
  }
  if (!reapedAny_) return;
  // A handler may remove itself or another: run a copy.
  const auto handlers = reapedHandlers_;
  for (const auto& [owner, handler] : handlers) {
    if (reapedHandlers_.count(owner)) handler();
  }
}

}  // namespace leasehold::supervise
