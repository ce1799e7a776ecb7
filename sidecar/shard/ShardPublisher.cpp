#include "shard/ShardPublisher.h"

namespace leasehold::shard {

ShardPublisher::ShardPublisher(time::Clock& clock, ShardMode& shards, net::HttpServer& http,
                               std::shared_ptr<publish::StatusFileWriter> file,
                               const log::Logger& logger, std::function<void()> alsoOnChange)
    : shards_(shards),
      stream_(clock, [&shards] { return shards.json(); }),
      file_(std::move(file)),
      logger_(logger),
      alsoOnChange_(std::move(alsoOnChange)) {
  http.route("GET", "/shards", [this](const net::ServerRequest&) {
    net::ServerResponse r;
    r.contentType = "application/json";
    r.body = shards_.json();
    r.headers.emplace_back("Cache-Control", "no-store");
    return r;
  });
  http.routeEvents("/shards/watch",
                   [this](std::shared_ptr<net::EventStream> c) { stream_.add(std::move(c)); });
  shards_.setOwnedSetChanged([this] { publish(); });
}

std::optional<std::string> ShardPublisher::writeInitialStatusFile() {
  if (!file_) return std::nullopt;
  return file_->writeNow(shards_.json() + "\n");
}

void ShardPublisher::publish() {
  const std::string json = shards_.json();
  stream_.publish(json);
  if (alsoOnChange_) alsoOnChange_();
  if (!file_) return;
  file_->write(json + "\n", [this](const std::optional<std::string>& p) {
    if (p.value_or("") == fileProblem_) return;
    if (p) logger_.error("cannot write the status file", {{"problem", *p}});
    fileProblem_ = p.value_or("");
  });
}

void ShardPublisher::finish(std::function<void()> done) {
  if (!file_) return done();
  file_->write(shards_.json() + "\n", [](const auto&) {});
  file_->flush(std::move(done));
}

}  // namespace leasehold::shard
