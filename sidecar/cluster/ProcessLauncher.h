#pragma once
// The process boundary of the exec credential plugin: start a program, collect its stdout, learn
// how it ended, all without blocking the event loop. AsyncProcessLauncher is the real one (on the
// io_context); the unit tests use a fake that the test finishes by hand.
//
// A child runs in a process group of its own with stdin from /dev/null, no descriptor of ours
// but stdout (a pipe) and stderr (ours: plugins print hints there), and default signal handling.
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace leasehold::cluster {

struct ProcessSpec {
  std::string path;               // the program; not searched in PATH
  std::vector<std::string> argv;  // argv[0] included
  // The whole environment, "NAME=value" each; values may be secrets and never reach a message.
  std::vector<std::string> environment;
  // Past this much stdout the process is killed and the exit says outputTooLarge.
  std::size_t maxOutputBytes = 1024 * 1024;
};

// How a process ended. Exactly one of startFailure, exitCode and signal is set; a process whose
// status could not be learnt (reaped by someone else) has none of them.
struct ProcessExit {
  std::string output;                       // its stdout (at most maxOutputBytes)
  std::optional<std::string> startFailure;  // "cannot start: No such file or directory"
  std::optional<int> exitCode;              // it exited
  std::optional<int> signal;                // a signal ended it (also our kill())
  bool outputTooLarge = false;              // killed for printing more than maxOutputBytes
  std::optional<std::string> readFailure;   // reading stdout failed (the output is partial)
};

// A started process. Destroying the handle kills the process group; `exited` then never runs,
// and the process is still reaped in the background. The handle may be destroyed from inside
// `exited`.
class RunningProcess {
 public:
  virtual ~RunningProcess() = default;
  // SIGKILL to its process group (the plugin and whatever it started); the exit still arrives.
  virtual void kill() = 0;
  virtual int pid() const = 0;
};

class ProcessLauncher {
 public:
  using Exited = std::function<void(ProcessExit)>;

  virtual ~ProcessLauncher() = default;
  // `exited` runs on the loop, never from inside start(), once the process has been reaped and
  // its stdout read to the end (or it was killed). A process that could not be started is
  // reported the same way, with startFailure.
  virtual std::unique_ptr<RunningProcess> start(ProcessSpec spec, Exited exited) = 0;
};

}  // namespace leasehold::cluster
