#include "publish/ProbeServer.h"

namespace leasehold::publish {

ProbeServer::ProbeServer(boost::asio::io_context& io, net::HttpServer::Options options,
                         const Metrics& metrics, ProbeInputs inputs)
    : server_(io, std::move(options)), metrics_(metrics), inputs_(std::move(inputs)) {
  server_.route("GET", "/healthz", [this](const net::ServerRequest&) {
    net::ServerResponse r;
    if (auto why = inputs_.unhealthyReason()) {
      r.status = 503;
      r.body = "unhealthy: " + *why + "\n";
    } else {
      r.body = "ok\n";
    }
    return r;
  });
  server_.route("GET", "/readyz", [this](const net::ServerRequest&) {
    net::ServerResponse r;
    if (inputs_.ready()) {
      r.body = "ok\n";
    } else {
      r.status = 503;
      r.body = "not ready: no answer from the API server yet\n";
    }
    return r;
  });
  server_.route("GET", "/metrics", [this](const net::ServerRequest&) {
    net::ServerResponse r;
    r.contentType = "text/plain; version=0.0.4; charset=utf-8";
    r.body = metrics_.render(inputs_.leadership());
    return r;
  });
}

}  // namespace leasehold::publish
