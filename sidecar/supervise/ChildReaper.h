#pragma once
// Reaps every child of this process on the event loop: SIGCHLD arrives through a
// boost::asio::signal_set, then waitid(WNOHANG) collects whatever has exited. Nothing blocks
// the loop and no thread waits.
//
// Every child, not just the ones asked for: run mode makes leasehold a child subreaper
// (PR_SET_CHILD_SUBREAPER), so the orphans of the supervised command (a grandchild whose parent
// died) come to it, and as PID 1 of a container every orphan of the container does. Reaping
// them is what tini does; it is also how "the group is gone" becomes observable.
//
// A watched child is reported in two steps: whileZombie() runs after it exited but before it is
// reaped (its pid, and with it the process group it leads, cannot be reused yet: the moment to
// signal whatever it left behind), then reaped(status).
//
// Children that other code starts and reaps itself (cluster::AsyncProcessLauncher, for exec
// credential plugins, reaps through a pidfd at once) must not be stolen: a zombie that is
// neither watched nor in a watched process group is reaped only once it has stayed a zombie for
// kForeignGrace, by which time its owner would have reaped it. Zombies of a watched group (the
// supervised command's orphans) are reaped at once.
#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <set>

#include "supervise/ExitStatus.h"

namespace leasehold::supervise {

class ChildReaper {
 public:
  struct Watch {
    std::function<void()> whileZombie;  // may be empty
    std::function<void(ExitStatus)> reaped;
  };

  static constexpr std::chrono::milliseconds kForeignGrace{200};

  // Becomes a child subreaper (unless already PID 1) and starts listening for SIGCHLD.
  explicit ChildReaper(boost::asio::io_context& io);
  ~ChildReaper();
  ChildReaper(const ChildReaper&) = delete;
  ChildReaper& operator=(const ChildReaper&) = delete;

  void watch(pid_t pid, Watch w);
  void unwatch(pid_t pid);
  // Every zombie in process group `group` is reaped at once.
  void watchGroup(pid_t group);
  void unwatchGroup(pid_t group);
  // Runs after every pass that reaped anything, watched or not. One per owner (each launcher
  // sharing this reaper: run mode with --shards has one per shard); an empty handler removes it.
  void setReapedHandler(const void* owner, std::function<void()> handler);
  // Reaps what has exited by now (every SIGCHLD runs it too).
  void reapNow();
  // Children reaped that nobody watched: orphans handed to this process.
  std::uint64_t orphansReaped() const { return orphansReaped_; }

 private:
  void awaitSignal();
  // Reaps pid (a zombie) and reports it.
  void reap(pid_t pid);
  void reapGroups();

  boost::asio::signal_set sigchld_;
  boost::asio::steady_timer later_;
  std::map<pid_t, Watch> watched_;
  std::set<pid_t> groups_;
  // Unknown zombies by when they were first seen.
  std::map<pid_t, std::chrono::steady_clock::time_point> foreign_;
  bool reapedAny_ = false;
  std::map<const void*, std::function<void()>> reapedHandlers_;
  std::uint64_t orphansReaped_ = 0;
};

}  // namespace leasehold::supervise
