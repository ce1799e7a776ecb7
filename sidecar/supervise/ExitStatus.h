#pragma once
// How a supervised command ended, and the exit code leasehold reports for it: the shell's
// convention (the code itself, or 128 + the signal number), so `leasehold run -- CMD` exits the
// way CMD would have under a shell.
#include <sys/types.h>
#include <string>

namespace leasehold::supervise {

struct ExitStatus {
  enum class Kind { kExited, kSignaled };
  Kind kind = Kind::kExited;
  int value = 0;  // the exit code, or the signal number

  static ExitStatus exited(int code) { return {Kind::kExited, code}; }
  static ExitStatus signaled(int signo) { return {Kind::kSignaled, signo}; }
  // From a waitpid() status word.
  static ExitStatus fromWaitStatus(int status);

  bool success() const { return kind == Kind::kExited && value == 0; }
  // 0-255: the code, or 128 + signal.
  int shellCode() const;
  // "exit 3", "signal 9 (KILL)": for the log.
  std::string describe() const;

  bool operator==(const ExitStatus&) const = default;
};

// "TERM" for SIGTERM and the other signals leasehold sends or reports; "SIG<n>" otherwise.
std::string signalName(int signo);

}  // namespace leasehold::supervise
