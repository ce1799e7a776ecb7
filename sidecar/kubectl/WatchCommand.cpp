#include "kubectl/WatchCommand.h"

#include <cstdio>

namespace leasehold::kubectl {
namespace {

std::string columns(const std::string& time, const std::string& holder, const std::string& pod,
                    const std::string& token) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "%-27s   %-20s   %-20s   %s\n", time.c_str(), holder.c_str(),
                pod.c_str(), token.c_str());
  return buf;
}

std::string orNone(const std::string& s) {
  return s.empty() ? "<none>" : s;
}

}  // namespace

WatchCommand::WatchCommand(CommandContext context) : ctx_(std::move(context)) {}

std::string WatchCommand::header() {
  return columns("TIME", "HOLDER", "POD", "TOKEN");
}

std::string WatchCommand::line(time::WallTime at,
                               const std::optional<election::LeaseRecord>& lease) {
  const std::string t = time::formatMicroTime(at);
  if (!lease) return columns(t, "<deleted>", "", "");
  return columns(t, orNone(lease->holderIdentity), orNone(lease->holderPod),
                 std::to_string(lease->leaseTransitions));
}

void WatchCommand::run(Done done) {
  done_ = std::move(done);
  if (ctx_.options.timeout) {
    timeout_ = ctx_.clock.makeTimer([this] { finish(0); });
    timeout_->armAt(ctx_.clock.now() + *ctx_.options.timeout);
  }
  LeaseFollower::Callbacks cb;
  cb.onLease = [this](const election::LeaseRecord& lease) { print(lease); };
  cb.onDeleted = [this] { print(std::nullopt); };
  cb.onFailure = [this](const std::string& line) {
    ctx_.console.err(line);
    finish(1);
  };
  follower_ = ctx_.followLease(std::move(cb));
  follower_->start();
}

void WatchCommand::print(const std::optional<election::LeaseRecord>& lease) {
  if (finished_) return;
  std::optional<std::tuple<std::string, std::string, std::int32_t>> now;
  if (lease) now.emplace(lease->holderIdentity, lease->holderPod, lease->leaseTransitions);
  if (!first_ && now == shown_) return;  // a renewal, or an edit of something else
  if (first_) ctx_.console.out(header());
  first_ = false;
  shown_ = now;
  ctx_.console.out(line(ctx_.clock.wallNow(), lease));
  if (ctx_.options.maxEvents && ++printed_ >= *ctx_.options.maxEvents) finish(0);
}

void WatchCommand::stop() {
  finish(0);
}

void WatchCommand::finish(int code) {
  if (finished_) return;
  finished_ = true;
  if (follower_) follower_->stop();
  timeout_.reset();
  if (done_) done_(code);
}

}  // namespace leasehold::kubectl
