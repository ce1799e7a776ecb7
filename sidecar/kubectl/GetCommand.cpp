#include "kubectl/GetCommand.h"

#include "kubectl/FailureMessage.h"
#include "kubectl/LeaseTable.h"

namespace leasehold::kubectl {

GetCommand::GetCommand(CommandContext context) : ctx_(std::move(context)) {}

void GetCommand::run(Done done) {
  const bool named = !ctx_.options.name.empty();
  const std::string ns = ctx_.options.allNamespaces ? "" : ctx_.ns;
  std::string path = "/apis/coordination.k8s.io/v1/";
  if (!ns.empty()) path += "namespaces/" + ns + "/";
  path += "leases";
  if (named) path += "/" + ctx_.options.name;
  const ApiAction action{named ? "get" : "list", ns, ctx_.options.name};
  ctx_.api.call(
      {action.verb, "GET", path, "", "application/json", ctx_.options.requestTimeout},
      [this, action, named, done = std::move(done)](kube::ApiResponse r) {
        if (!r.ok()) {
          ctx_.console.err(FailureMessage::describe(r, action, ctx_.server));
          return done(1);
        }
        const auto now = ctx_.clock.wallNow();
        std::vector<LeaseRow> rows;
        std::string error;
        bool decoded = false;
        if (named) {
          rows.emplace_back();
          decoded = decodeLeaseRow(r.body, now, rows.back(), error);
        } else {
          decoded = decodeLeaseRows(r.body, now, rows, error);
        }
        if (!decoded) {
          ctx_.console.err("the API server's answer to " + action.verb + " leases: " + error);
          return done(1);
        }
        if (ctx_.options.output == OutputFormat::kJson) {
          ctx_.console.out(named ? LeaseTable::json(rows.front()) : LeaseTable::json(rows));
        } else if (rows.empty()) {
          ctx_.console.info(ctx_.options.allNamespaces
                                ? "No leases found."
                                : "No leases found in namespace \"" + action.ns + "\".");
        } else {
          ctx_.console.out(LeaseTable::table(rows, ctx_.options.allNamespaces,
                                             ctx_.options.output == OutputFormat::kWide));
        }
        done(0);
      });
}

}  // namespace leasehold::kubectl
