#pragma once
// `leasehold copy-self DEST`: copies the running binary (/proc/self/exe) to DEST, mode 0755,
// never leaving a half-written file under DEST's name (install/ExecutableCopy.h). Run mode's
// init container runs it (charts/leasehold, _helpers.tpl `leasehold.runModeCopy`): the image
// is FROM scratch, with no shell and no cp. Dispatched by main.cpp before the configuration is
// read; no flag of the sidecar applies.
#include <ostream>
#include <string>
#include <vector>

namespace leasehold::install {

class CopySelfCommand {
 public:
  static constexpr const char* kName = "copy-self";
  static constexpr const char* kUsage = "leasehold copy-self DEST";

  // argv[1] is "copy-self".
  static bool invoked(int argc, const char* const* argv);
  // `args` are the words after "copy-self". Exit status: 0 copied (or --help, on `out`), 2 a
  // usage error (no DEST, two, an unknown option), 1 the copy failed; errors go to `err` as one
  // line naming DEST. `self` is the file copied: /proc/self/exe, the running binary.
  static int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                 const std::string& self = "/proc/self/exe");
};

}  // namespace leasehold::install
