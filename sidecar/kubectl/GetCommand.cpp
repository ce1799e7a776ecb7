#include "kubectl/GetCommand.h"

#include "kubectl/FailureMessage.h"
#include "kubectl/LeaseTable.h"

namespace leasehold::kubectl {

GetCommand::GetCommand(kube::ApiTransport& api, time::Clock& clock, const PluginOptions& options,
                       std::string ns, std::string server, Console console)
    : api_(api),
      clock_(clock),
      options_(options),
      ns_(std::move(ns)),
      server_(std::move(server)),
      console_(std::move(console)) {}

void GetCommand::run(Done done) {
  const bool named = !options_.name.empty();
  const std::string ns = options_.allNamespaces ? "" : ns_;
  std::string path = "/apis/coordination.k8s.io/v1/";
  if (!ns.empty()) path += "namespaces/" + ns + "/";
  path += "leases";
  if (named) path += "/" + options_.name;
  const ApiAction action{named ? "get" : "list", ns, options_.name};
  api_.call({action.verb, "GET", path, "", "application/json", options_.requestTimeout},
            [this, action, named, done = std::move(done)](kube::ApiResponse r) {
              if (!r.ok()) {
                console_.err(FailureMessage::describe(r, action, server_));
                return done(1);
              }
              const auto now = clock_.wallNow();
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
                console_.err("the API server's answer to " + action.verb + " leases: " + error);
                return done(1);
              }
              if (options_.output == OutputFormat::kJson) {
                console_.out(named ? LeaseTable::json(rows.front()) : LeaseTable::json(rows));
              } else if (rows.empty()) {
                console_.info(options_.allNamespaces
                                  ? "No leases found."
                                  : "No leases found in namespace \"" + action.ns + "\".");
              } else {
                console_.out(LeaseTable::table(rows, options_.allNamespaces,
                                               options_.output == OutputFormat::kWide));
              }
              done(0);
            });
}

}  // namespace leasehold::kubectl
