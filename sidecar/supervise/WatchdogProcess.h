#pragma once
// The watchdog: a small process of its own that kills the supervised command's process group
// when the supervisor cannot. The supervisor (leasehold run) tells it, at every renewal, until
// when the claim is valid; a paused supervisor (SIGSTOP, a stuck loop) tells it nothing more,
// and the watchdog, which is not paused with it, kills the group at that instant. When the
// supervisor vanishes (kill -9: the order pipe reaches end of file) it kills every group it
// guards at once. It guards any number of groups, each at its own instant (WatchdogGuards: run
// mode with --shards has one command per owned shard). It is not in the command's process
// group, nor in the supervisor's (a Ctrl-C on a terminal must not reach it), and ignores
// SIGINT, SIGTERM, SIGHUP and SIGQUIT: it ends when its pipe does.
//
// It is the leasehold binary executed again with argv[1] == "__watchdog" (main() hands over to
// run() before anything else), so it starts with a fresh, small address space. It uses only
// system calls: poll on the order pipe and a CLOCK_BOOTTIME timerfd set to the absolute kill
// instant.
namespace leasehold::supervise {

class WatchdogProcess {
 public:
  // Whether this process was started as the watchdog.
  static bool invoked(int argc, char** argv);
  // Reads orders from orderFd until it closes; never returns.
  [[noreturn]] static void run(int orderFd);
};

}  // namespace leasehold::supervise
