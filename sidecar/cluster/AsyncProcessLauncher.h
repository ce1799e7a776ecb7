#pragma once
// The real ProcessLauncher: runs a child process on the daemon's one event loop, with no thread
// of its own and nothing that blocks.
//
// - Start: posix_spawn (glibc's clone+exec, safe next to the status-file thread), the child in a
//   process group of its own so that kill() reaches whatever the plugin started, stdin from
//   /dev/null, stdout a pipe, every other descriptor above stderr closed in the child (Asio's
//   sockets are not close-on-exec), signal mask and dispositions reset to the defaults.
// - Output: the pipe is read through a stream_descriptor as bytes arrive, up to the cap.
// - Reaping: pidfd_open (Linux 5.3) wrapped in a stream_descriptor and waited for readable, then
//   waitpid(WNOHANG). Where pidfd_open is refused (an older kernel, a seccomp profile that
//   predates it) waitpid(WNOHANG) is polled every kPollInterval on an Asio timer instead.
// The deadline is the caller's: it calls kill() at a time of its choosing (ExecTokenSource does,
// on the injected Clock).
#include <boost/asio/io_context.hpp>
#include <chrono>

#include "cluster/ProcessLauncher.h"

namespace leasehold::cluster {

class AsyncProcessLauncher : public ProcessLauncher {
 public:
  enum class Reaping {
    kPidFdOrPolling,  // production
    kPolling,         // the fallback, forced (for its tests)
  };
  static constexpr std::chrono::milliseconds kPollInterval{20};

  explicit AsyncProcessLauncher(boost::asio::io_context& io,
                                Reaping reaping = Reaping::kPidFdOrPolling)
      : io_(io), reaping_(reaping) {}

  std::unique_ptr<RunningProcess> start(ProcessSpec spec, Exited exited) override;

 private:
  boost::asio::io_context& io_;
  Reaping reaping_;
};

}  // namespace leasehold::cluster
