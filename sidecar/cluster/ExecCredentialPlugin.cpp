#include "cluster/ExecCredentialPlugin.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <thread>

namespace leasehold::cluster {

namespace {

using SteadyTime = std::chrono::steady_clock::time_point;

bool isExecutableFile(const std::filesystem::path& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

int millisecondsLeft(SteadyTime deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return left.count() <= 0 ? 0 : static_cast<int>(left.count());
}

// Closes a descriptor when the scope ends, whatever path the run takes.
class OwnedFd {
 public:
  explicit OwnedFd(int fd = -1) : fd_(fd) {}
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
  ~OwnedFd() { reset(); }
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

// How the child ended: its wait status, or why there is none.
struct ChildExit {
  std::optional<int> status;
  bool killed = false;  // still running at the deadline
};

// Waits for the child until the deadline; kills it if it is still running then.
ChildExit reapChild(pid_t pid, SteadyTime deadline) {
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return {status, false};
    if (r < 0 && errno != EINTR) return {std::nullopt, false};  // ECHILD: reaped elsewhere
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      return {std::nullopt, true};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace

ExecCredentialPlugin::ExecCredentialPlugin(ExecPluginConfig config, Environment environment,
                                           std::chrono::milliseconds timeout)
    : config_(std::move(config)), environment_(std::move(environment)), timeout_(timeout) {}

std::string ExecCredentialPlugin::describe() const {
  std::string text = "exec plugin \"" + config_.command + "\"";
  if (!config_.origin.empty()) text += " (" + config_.origin + ")";
  return text;
}

LoadResult<std::string> ExecCredentialPlugin::resolveCommand() const {
  const std::string hint = config_.installHint ? "\n" + *config_.installHint : "";
  if (config_.command.find('/') != std::string::npos) {
    std::filesystem::path path = config_.command;
    if (path.is_relative()) path = config_.baseDirectory / path;
    if (!isExecutableFile(path)) {
      return LoadError{describe() + ": " + path.string() + " is not an executable file" + hint};
    }
    return path.string();
  }
  const auto found = environment_.find("PATH");
  const std::string searchPath = found != environment_.end() ? found->second : "/usr/bin:/bin";
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = searchPath.find(':', start);
    std::string dir = searchPath.substr(start, end == std::string::npos ? end : end - start);
    if (dir.empty()) dir = ".";
    const auto candidate = std::filesystem::path(dir) / config_.command;
    if (isExecutableFile(candidate)) return candidate.string();
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return LoadError{describe() + ": command not found in PATH" + hint};
}

std::string ExecCredentialPlugin::execInfoJson() const {
  nlohmann::json spec = {{"interactive", false}};
  if (config_.clusterInfoJson) {
    spec["cluster"] = nlohmann::json::parse(*config_.clusterInfoJson, nullptr, false);
  }
  const nlohmann::json info = {
      {"apiVersion", config_.apiVersion}, {"kind", "ExecCredential"}, {"spec", spec}};
  return info.dump();
}

LoadResult<ExecCredential> ExecCredentialPlugin::run() const {
  auto command = resolveCommand();
  if (!command) return command.error();

  std::vector<std::string> argStrings{*command};
  argStrings.insert(argStrings.end(), config_.args.begin(), config_.args.end());
  Environment env = environment_;
  for (const auto& [name, value] : config_.env)
    env[name] = value;
  env["KUBERNETES_EXEC_INFO"] = execInfoJson();
  std::vector<std::string> envStrings;
  envStrings.reserve(env.size());
  for (const auto& [name, value] : env)
    envStrings.push_back(name + "=" + value);

  std::vector<char*> argv;
  for (auto& s : argStrings)
    argv.push_back(s.data());
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (auto& s : envStrings)
    envp.push_back(s.data());
  envp.push_back(nullptr);

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return LoadError{describe() + ": cannot create a pipe: " + std::strerror(errno)};
  }
  OwnedFd readEnd(fds[0]);
  OwnedFd writeEnd(fds[1]);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, writeEnd.get(), STDOUT_FILENO);
  // The event loop may block or handle signals; the plugin should start with the defaults.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t noSignals, allSignals;
  sigemptyset(&noSignals);
  sigfillset(&allSignals);
  posix_spawnattr_setsigmask(&attributes, &noSignals);
  posix_spawnattr_setsigdefault(&attributes, &allSignals);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  pid_t pid = -1;
  const int spawnError =
      ::posix_spawn(&pid, argv[0], &actions, &attributes, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  writeEnd.reset();
  if (spawnError != 0) {
    return LoadError{describe() + ": cannot start: " + std::strerror(spawnError)};
  }

  const SteadyTime deadline = std::chrono::steady_clock::now() + timeout_;
  std::string output;
  std::optional<std::string> failure;
  char buffer[4096];
  for (;;) {
    pollfd pfd{readEnd.get(), POLLIN, 0};
    const int ready = ::poll(&pfd, 1, millisecondsLeft(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) {
      failure = std::string("cannot wait for output: ") + std::strerror(errno);
      break;
    }
    if (ready == 0) {
      failure = "did not finish within " + std::to_string(timeout_.count()) + " ms";
      break;
    }
    const ssize_t n = ::read(readEnd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      failure = std::string("cannot read output: ") + std::strerror(errno);
      break;
    }
    if (n == 0) break;
    if (output.size() + static_cast<std::size_t>(n) > kMaxOutputBytes) {
      failure = "printed more than " + std::to_string(kMaxOutputBytes) + " bytes";
      break;
    }
    output.append(buffer, static_cast<std::size_t>(n));
  }
  readEnd.reset();

  // On failure the deadline is moved to now so the child is killed at once.
  const ChildExit ended = reapChild(pid, failure ? std::chrono::steady_clock::now() : deadline);
  if (failure) return LoadError{describe() + ": " + *failure};
  if (ended.killed) {
    return LoadError{describe() + ": did not exit within " + std::to_string(timeout_.count()) +
                     " ms"};
  }
  if (!ended.status) {
    return LoadError{describe() +
                     ": exit status unknown (the process was reaped elsewhere; is "
                     "SIGCHLD ignored?)"};
  }
  const auto& status = ended.status;
  if (WIFSIGNALED(*status)) {
    return LoadError{describe() + ": killed by signal " + std::to_string(WTERMSIG(*status))};
  }
  if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
    return LoadError{describe() + ": exited with status " + std::to_string(WEXITSTATUS(*status))};
  }
  return ExecCredential::parse(output, config_.apiVersion, describe());
}

}  // namespace leasehold::cluster
