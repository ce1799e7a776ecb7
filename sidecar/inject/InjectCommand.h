#pragma once
// `leasehold inject`: the sidecar injector as a mutating admission webhook (the chart's
// injector.mode webhook, for clusters without MutatingAdmissionPolicy). Serves POST /mutate
// (AdmissionReviewHandler) and GET /healthz over HTTPS on one event loop; re-reads the
// parameters directory and the certificate files every 2 seconds (InjectorFiles); stops on
// SIGTERM or SIGINT after the requests in progress. Dispatched by main.cpp before the sidecar's
// configuration is read; no flag of the sidecar applies.
#include <ostream>
#include <string>
#include <vector>

namespace leasehold::inject {

class InjectCommand {
 public:
  static constexpr const char* kName = "inject";

  // argv[1] is "inject".
  static bool invoked(int argc, const char* const* argv);
  // `args` are the words after "inject". Exit status: 0 after a signal (or --help, on `out`),
  // 2 a usage error or a start that failed (no certificate, cannot listen), as one line on
  // `err` naming the flag or file. The log goes to stderr.
  static int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
};

}  // namespace leasehold::inject
