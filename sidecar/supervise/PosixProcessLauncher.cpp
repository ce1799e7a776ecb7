#include "supervise/PosixProcessLauncher.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <set>

#include "supervise/ChildSetup.h"

extern char** environ;

namespace leasehold::supervise {

using namespace std::chrono_literals;

namespace {

// Everything the child needs, built before fork: after it, nothing may allocate.
struct ExecImage {
  std::string path;
  std::vector<std::string> argStorage;
  std::vector<std::string> envStorage;
  std::vector<char*> argv;
  std::vector<char*> envp;
  int descriptorLimit = 1024;
};

ExecImage makeImage(const std::string& path, const std::vector<std::string>& args,
                    const Environment& extra) {
  ExecImage image;
  image.path = path;
  image.argStorage = args;
  std::set<std::string> overridden;
  for (const auto& [k, v] : extra)
    overridden.insert(k);
  for (char** e = environ; e && *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    const std::string key =
        eq ? std::string(*e, static_cast<std::size_t>(eq - *e)) : std::string(*e);
    if (!overridden.count(key)) image.envStorage.emplace_back(*e);
  }
  for (const auto& [k, v] : extra)
    image.envStorage.push_back(k + "=" + v);
  for (auto& a : image.argStorage)
    image.argv.push_back(a.data());
  image.argv.push_back(nullptr);
  for (auto& e : image.envStorage)
    image.envp.push_back(e.data());
  image.envp.push_back(nullptr);
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    image.descriptorLimit = static_cast<int>(std::min<rlim_t>(limit.rlim_cur, 1 << 20));
  }
  return image;
}

// gate: the read end of the start gate. The command runs none of its own code before the
// supervisor has told the watchdog to guard its group: a supervisor paused (SIGSTOP, a frozen
// VM) between the fork and that order would otherwise leave a command running past the claim
// with nobody to stop it (session 19's chaos.run_mode_long, scenario 33: the supervisor was
// stopped for 3.8 s right after the fork, and the watchdog killed the group only when it
// resumed). Nothing but one byte ever comes through it; end of file means do not start.
[[noreturn]] void execChild(const ExecImage& image, pid_t parent, int gate) {
  ::setpgid(0, 0);
  // Dies with leasehold. The parent may have died before this line: then nobody would.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (::getppid() != parent) ::_exit(127);
  char go = 0;
  ssize_t n;
  do {
    n = ::read(gate, &go, 1);
  } while (n < 0 && errno == EINTR);
  if (n != 1) ::_exit(127);
  resetSignalsForExec();
  // The status API's sockets, the watchdog's pipe: not the command's business.
  if (::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
    for (int fd = 3; fd < image.descriptorLimit; ++fd)
      ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
  ::execve(image.path.c_str(), image.argv.data(), image.envp.data());
  exitAfterFailedExec("command");
}

bool isExecutableFile(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
}

}  // namespace

std::optional<std::string> findExecutable(const std::string& name, const std::string& path) {
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string::npos) {
    if (isExecutableFile(name)) return name;
    return std::nullopt;
  }
  std::size_t begin = 0;
  for (;;) {
    const std::size_t end = path.find(':', begin);
    std::string dir =
        path.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    if (dir.empty()) dir = ".";
    const std::string candidate = dir + "/" + name;
    if (isExecutableFile(candidate)) return candidate;
    if (end == std::string::npos) return std::nullopt;
    begin = end + 1;
  }
}

PosixProcessLauncher::PosixProcessLauncher(time::Clock& clock, ChildReaper& reaper,
                                           Watchdog& watchdog, time::Duration leftoverGrace)
    : clock_(clock),
      reaper_(reaper),
      watchdog_(watchdog),
      leftoverGrace_(leftoverGrace),
      recheck_(clock_.makeTimer([this] { checkGroupGone(); })),
      killLeftovers_(clock_.makeTimer([this] { killGroup(); })) {}

PosixProcessLauncher::~PosixProcessLauncher() {
  if (group_ > 0) {
    killGroup();
    reaper_.unwatch(group_);
    reaper_.unwatchGroup(group_);
  }
  reaper_.setReapedHandler(this, nullptr);
}

std::optional<pid_t> PosixProcessLauncher::group() const {
  if (group_ <= 0) return std::nullopt;
  return group_;
}

time::MonoTime PosixProcessLauncher::realBootTime(time::MonoTime t) const {
  return time::BootClock::now() + (t - clock_.now());
}

LaunchResult PosixProcessLauncher::start(const std::vector<std::string>& argv,
                                         const Environment& extraEnv, time::MonoTime killBy,
                                         ExitHandler onExit) {
  if (group_ > 0) return {-1, "a command is already running"};
  if (argv.empty()) return {-1, "no command"};
  const char* pathVar = std::getenv("PATH");
  const auto path = findExecutable(argv.front(), pathVar ? pathVar : "/usr/bin:/bin");
  if (!path) return {-1, argv.front() + ": no such executable (PATH searched)"};
  const ExecImage image = makeImage(*path, argv, extraEnv);
  const pid_t parent = ::getpid();
  int gate[2];
  if (::pipe2(gate, O_CLOEXEC) != 0) return {-1, std::string("pipe: ") + std::strerror(errno)};
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int error = errno;
    ::close(gate[0]);
    ::close(gate[1]);
    return {-1, std::string("fork: ") + std::strerror(error)};
  }
  if (pid == 0) execChild(image, parent, gate[0]);
  ::close(gate[0]);
  ::setpgid(pid, pid);  // the child does it too; whichever comes first
  group_ = pid;
  leaderGone_ = false;
  killed_ = false;
  onExit_ = std::move(onExit);
  // The watchdog first, then the command may start (execChild's gate). A kill instant that has
  // passed by now (this process was paused) has the watchdog kill the group before it starts.
  watchdog_.guard(pid, realBootTime(killBy));
  const char go = 1;
  [[maybe_unused]] const auto written = ::write(gate[1], &go, 1);
  ::close(gate[1]);
  reaper_.watchGroup(pid);
  reaper_.watch(pid, {[this] { leaderExited(); }, [this](ExitStatus s) { leaderReaped(s); }});
  reaper_.setReapedHandler(this, [this] {
    if (leaderGone_) checkGroupGone();
  });
  return {pid, ""};
}

void PosixProcessLauncher::guardUntil(time::MonoTime killBy) {
  if (group_ > 0 && !killed_) watchdog_.guard(group_, realBootTime(killBy));
}

void PosixProcessLauncher::signalGroup(int signo) {
  if (group_ <= 0) return;
  if (signo == SIGKILL) return killGroup();
  ::kill(-group_, signo);
  // A stopped process keeps a SIGTERM pending until it runs again.
  if (signo != SIGCONT) ::kill(-group_, SIGCONT);
}

void PosixProcessLauncher::killGroup() {
  if (group_ <= 0 || killed_) return;
  // ESRCH: nobody left (the check below will see it); the watchdog is not needed either way.
  ::kill(-group_, SIGKILL);
  killed_ = true;
  killLeftovers_->disarm();
  watchdog_.standDown(group_);
}

// The leader is a zombie: its pid still holds the group id.
void PosixProcessLauncher::leaderExited() {
  if (killed_) return;
  ::kill(-group_, SIGTERM);
  ::kill(-group_, SIGCONT);
}

void PosixProcessLauncher::leaderReaped(ExitStatus status) {
  leaderGone_ = true;
  leaderStatus_ = status;
  if (!killed_) killLeftovers_->armAt(clock_.now() + leftoverGrace_);
  checkGroupGone();
}

void PosixProcessLauncher::checkGroupGone() {
  if (group_ <= 0 || !leaderGone_) return;
  if (::kill(-group_, 0) == 0 || errno == EPERM) {
    // Dying members, or zombies someone else has to reap.
    recheck_->armAt(clock_.now() + 20ms);
    return;
  }
  recheck_->disarm();
  killLeftovers_->disarm();
  reaper_.unwatchGroup(group_);
  if (!killed_) watchdog_.standDown(group_);
  group_ = -1;
  leaderGone_ = false;
  killed_ = false;
  auto onExit = std::move(onExit_);
  onExit_ = nullptr;
  if (onExit) onExit(leaderStatus_);
}

}  // namespace leasehold::supervise
