#include "app/ApiConnections.h"

#include "kube/RefusalHint.h"

namespace leasehold::app {

ApiConnections::ApiConnections(boost::asio::io_context& io, const cluster::RestConfig& rest,
                               const std::string& userAgent, publish::Metrics& metrics,
                               const log::Logger& logger, runtime::BlockingWorker& worker)
    : metrics_(metrics),
      logger_(logger),
      resolver_(worker),
      lease_(io, rest, userAgent, resolver_),
      side_(io, rest, userAgent, resolver_) {
  for (kube::ApiClient* api : {&lease_, &side_}) {
    api->setWarningHandler([this](const std::string& w) { logger_.warn(w); });
  }
  lease_.setRequestObserver([this](const std::string& verb, int code) {
    observe(kube::Connection::kLease, verb, code);
    if (code != 0) answered_ = true;
  });
  side_.setRequestObserver(
      [this](const std::string& verb, int code) { observe(kube::Connection::kSide, verb, code); });
}

void ApiConnections::observe(kube::Connection connection, const std::string& verb, int code) {
  metrics_.apiRequest(verb, code);
  // Per connection: a refused Event create must not hide a refused Lease create.
  int& last = lastCode_[{connection, verb}];
  if ((code == 401 || code == 403) && last != code) {
    logger_.warn("API request refused", {{"verb", verb},
                                         {"code", std::to_string(code)},
                                         {"hint", kube::refusalHint(connection, verb, code)}});
  }
  last = code;
}

void ApiConnections::shutdown() {
  lease_.shutdown();
  side_.shutdown();
}

}  // namespace leasehold::app
