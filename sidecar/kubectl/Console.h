#pragma once
// Where a command writes: `out` is stdout (results, as text with its newlines); `info` a line
// for stderr that is not an error ("No leases found"); `err` the one error line (main prints it
// as kubectl does, "error: ..."). Functions, so tests collect the text and main writes and
// flushes it at once (watch lines appear live).
#include <functional>
#include <string>

namespace leasehold::kubectl {

struct Console {
  std::function<void(const std::string&)> out;
  std::function<void(const std::string&)> info;
  std::function<void(const std::string&)> err;
};

// How a command ends: 0 done, 1 failed (the line is on err).
using Done = std::function<void(int exitCode)>;

}  // namespace leasehold::kubectl
