#include "cluster/AsyncProcessLauncher.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <cstring>
#include <optional>

#if !defined(__GLIBC__) || __GLIBC__ < 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ < 34)
#error "AsyncProcessLauncher needs glibc 2.34 (posix_spawn_file_actions_addclosefrom_np)"
#endif

namespace leasehold::cluster {
namespace {

std::string errnoText(const char* what, int error) {
  return std::string(what) + ": " + std::strerror(error);
}

// -1 with errno when the kernel (or a seccomp filter) refuses; glibc 2.36 has no wrapper.
int openPidFd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  errno = ENOSYS;
  return -1;
#endif
}

// One child from spawn to report. Pending Asio operations hold it (shared_from_this), so it
// lives until the child has been reaped even when the handle is gone.
class Child : public std::enable_shared_from_this<Child> {
 public:
  Child(boost::asio::io_context& io, std::size_t maxOutputBytes, ProcessLauncher::Exited exited)
      : io_(io),
        stdout_(io),
        pollTimer_(io),
        maxOutputBytes_(maxOutputBytes),
        exited_(std::move(exited)) {}

  // The child is running: read its stdout, wait for its exit.
  void watch(pid_t pid, int stdoutFd, int pidFd) {
    pid_ = pid;
    stdout_.assign(stdoutFd);
    readMore();
    if (pidFd >= 0) {
      pidFd_.emplace(io_, pidFd);
      waitForPidFd();
    } else {
      pollLater();
    }
  }

  // It never started: report that from the loop, not from inside start().
  void failedToStart(std::string why) {
    exit_.startFailure = std::move(why);
    reaped_ = true;
    outputDone_ = true;
    boost::asio::post(io_, [self = shared_from_this()] { self->finishIfDone(); });
  }

  // Never reports from inside: the report is posted, so a caller can drop its handle after.
  void kill() {
    if (reported_ || killed_) return;
    killed_ = true;
    // The group (pgid = the child's pid) is reached while the child is unreaped, or while a
    // member still holds the pipe open: either way the number is still taken by our group.
    if (pid_ > 0 && (!reaped_ || !outputDone_)) {
      if (::kill(-pid_, SIGKILL) != 0 && !reaped_) ::kill(pid_, SIGKILL);  // no group yet?
    }
    boost::asio::post(io_, [self = shared_from_this()] { self->finishIfDone(); });
  }

  // The handle is gone: nobody to tell, but the child is still killed and reaped.
  void abandon() {
    exited_ = nullptr;
    kill();
  }

  int pid() const { return pid_; }

 private:
  void readMore() {
    stdout_.async_read_some(boost::asio::buffer(buffer_),
                            [self = shared_from_this()](const boost::system::error_code& ec,
                                                        std::size_t n) { self->onRead(ec, n); });
  }

  void onRead(const boost::system::error_code& ec, std::size_t n) {
    if (reported_ || outputDone_) return;
    if (n > 0) {
      if (exit_.output.size() + n > maxOutputBytes_) {
        exit_.outputTooLarge = true;
        outputDone_ = true;
        kill();
        return;
      }
      exit_.output.append(buffer_.data(), n);
    }
    if (ec == boost::asio::error::eof) {
      outputDone_ = true;
      finishIfDone();
      return;
    }
    if (ec) {
      if (ec == boost::asio::error::operation_aborted) return;
      exit_.readFailure = "cannot read its output: " + ec.message();
      outputDone_ = true;
      finishIfDone();
      return;
    }
    readMore();
  }

  void waitForPidFd() {
    pidFd_->async_wait(boost::asio::posix::stream_descriptor::wait_read,
                       [self = shared_from_this()](const boost::system::error_code& ec) {
                         if (ec == boost::asio::error::operation_aborted || self->reaped_) return;
                         if (!self->tryReap()) {
                           self->waitForPidFd();  // readable means exited; cannot recur
                           return;
                         }
                         self->finishIfDone();
                       });
  }

  void pollLater() {
    pollTimer_.expires_after(AsyncProcessLauncher::kPollInterval);
    pollTimer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (ec || self->reaped_) return;
      if (!self->tryReap()) {
        self->pollLater();
        return;
      }
      self->finishIfDone();
    });
  }

  // waitpid without waiting: true once the child is gone.
  bool tryReap() {
    int status = 0;
    pid_t r;
    do {
      r = ::waitpid(pid_, &status, WNOHANG);
    } while (r < 0 && errno == EINTR);
    if (r == 0) return false;
    reaped_ = true;
    if (r == pid_) {
      if (WIFEXITED(status)) exit_.exitCode = WEXITSTATUS(status);
      if (WIFSIGNALED(status)) exit_.signal = WTERMSIG(status);
    }
    // r < 0 (ECHILD): reaped by someone else (SIGCHLD ignored?): no status to report.
    return true;
  }

  // Reported once the child is reaped and its output read to the end, or it was killed (then a
  // descendant that escaped the group and holds the pipe open does not hold up the report).
  void finishIfDone() {
    if (reported_ || !reaped_ || !(outputDone_ || killed_)) return;
    reported_ = true;
    boost::system::error_code ignored;
    stdout_.close(ignored);
    if (pidFd_) pidFd_->close(ignored);
    pollTimer_.cancel();
    if (auto exited = std::move(exited_)) exited(std::move(exit_));
  }

  boost::asio::io_context& io_;
  boost::asio::posix::stream_descriptor stdout_;
  std::optional<boost::asio::posix::stream_descriptor> pidFd_;
  boost::asio::steady_timer pollTimer_;
  std::array<char, 4096> buffer_{};
  std::size_t maxOutputBytes_;
  ProcessLauncher::Exited exited_;
  ProcessExit exit_;
  pid_t pid_ = -1;
  bool outputDone_ = false;
  bool reaped_ = false;
  bool killed_ = false;
  bool reported_ = false;
};

class ChildHandle : public RunningProcess {
 public:
  explicit ChildHandle(std::shared_ptr<Child> child) : child_(std::move(child)) {}
  ~ChildHandle() override { child_->abandon(); }
  void kill() override { child_->kill(); }
  int pid() const override { return child_->pid(); }

 private:
  std::shared_ptr<Child> child_;
};

// posix_spawn's attribute and file-action objects, destroyed on every path.
class SpawnSetup {
 public:
  SpawnSetup() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attributes);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;

  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
};

}  // namespace

std::unique_ptr<RunningProcess> AsyncProcessLauncher::start(ProcessSpec spec, Exited exited) {
  auto child = std::make_shared<Child>(io_, spec.maxOutputBytes, std::move(exited));
  auto handle = std::make_unique<ChildHandle>(child);

  std::vector<char*> argv;
  for (auto& s : spec.argv)
    argv.push_back(s.data());
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (auto& s : spec.environment)
    envp.push_back(s.data());
  envp.push_back(nullptr);

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    child->failedToStart(errnoText("cannot create a pipe", errno));
    return handle;
  }

  SpawnSetup setup;
  // In order: stdin, stdout onto the pipe, then everything from 3 up (the pipe's own ends and
  // any descriptor of ours that is not close-on-exec). stderr stays ours.
  posix_spawn_file_actions_addopen(&setup.actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&setup.actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclosefrom_np(&setup.actions, STDERR_FILENO + 1);
  // The loop may block or handle signals; the child starts with the defaults, in a group of its
  // own (pgid = its pid) so that a kill reaches what it starts.
  sigset_t noSignals, allSignals;
  sigemptyset(&noSignals);
  sigfillset(&allSignals);
  posix_spawnattr_setsigmask(&setup.attributes, &noSignals);
  posix_spawnattr_setsigdefault(&setup.attributes, &allSignals);
  posix_spawnattr_setpgroup(&setup.attributes, 0);
  posix_spawnattr_setflags(&setup.attributes,
                           POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);

  pid_t pid = -1;
  const int spawnError = ::posix_spawn(&pid, spec.path.c_str(), &setup.actions, &setup.attributes,
                                       argv.data(), envp.data());
  ::close(fds[1]);
  if (spawnError != 0) {
    ::close(fds[0]);
    child->failedToStart(errnoText("cannot start", spawnError));
    return handle;
  }
  const int pidFd = reaping_ == Reaping::kPolling ? -1 : openPidFd(pid);
  child->watch(pid, fds[0], pidFd);
  return handle;
}

}  // namespace leasehold::cluster
