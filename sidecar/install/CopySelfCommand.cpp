#include "install/CopySelfCommand.h"

#include <string_view>

#include "install/ExecutableCopy.h"

namespace leasehold::install {

namespace {

constexpr const char* kHelp =
    "Usage: leasehold copy-self DEST\n"
    "\n"
    "Copies this leasehold binary (/proc/self/exe) to DEST with mode 0755: written to a\n"
    "temporary file in DEST's directory, synced, then renamed over DEST, so DEST never names a\n"
    "half-written binary. DEST is the file's path, not a directory. For run mode's init\n"
    "container, which puts the binary on an emptyDir for the app container (the image has no\n"
    "shell and no cp).\n"
    "\n"
    "Options:\n"
    "  -h,--help  Print this help and exit\n"
    "  --         Ends the options (for a DEST starting with -)\n"
    "\n"
    "Exit status: 0 copied, 1 the copy failed, 2 a usage error.\n";

int usageError(std::ostream& err, const std::string& problem) {
  err << "leasehold copy-self: " << problem << " (usage: " << CopySelfCommand::kUsage
      << "; see leasehold copy-self --help)\n";
  return 2;
}

}  // namespace

bool CopySelfCommand::invoked(int argc, const char* const* argv) {
  return argc >= 2 && std::string_view(argv[1]) == kName;
}

int CopySelfCommand::run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                         const std::string& self) {
  std::vector<std::string> operands;
  bool optionsEnded = false;
  for (const auto& arg : args) {
    if (!optionsEnded && arg == "--") {
      optionsEnded = true;
    } else if (!optionsEnded && (arg == "-h" || arg == "--help")) {
      out << kHelp;
      return 0;
    } else if (!optionsEnded && arg.size() > 1 && arg.front() == '-') {
      return usageError(err, "unknown option " + arg);
    } else {
      operands.push_back(arg);
    }
  }
  if (operands.empty()) return usageError(err, "no DEST");
  if (operands.size() > 1)
    return usageError(err, "one DEST only, got " + std::to_string(operands.size()));
  if (operands.front().empty()) return usageError(err, "DEST is empty");
  if (const auto error = copyExecutable(self, operands.front()); !error.empty()) {
    err << "leasehold copy-self: " << error << "\n";
    return 1;
  }
  return 0;
}

}  // namespace leasehold::install
