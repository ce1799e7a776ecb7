#include "zookeeper/ZkSharedSession.h"

#include <algorithm>
#include <utility>

namespace leasehold::zookeeper {

class ZkSharedSession::View final : public ZkClient {
 public:
  explicit View(ZkSharedSession& shared) : shared_(shared) {
    shared_.views_.push_back(this);
    replay_ = shared_.clock_.makeTimer([this] { replay(); });
    closed_ = shared_.clock_.makeTimer([this] { finishClose(); });
  }
  ~View() override { detach(); }

  void setSessionHandler(std::function<void(const ZkSessionEvent&)> handler) override {
    handler_ = std::move(handler);
  }
  void open() override {
    if (shared_.connected_) replay_->armAt(shared_.clock_.now());
    shared_.openOnce();
  }
  void close(std::function<void()> done) override {
    detach();
    if (done) closeDone_.push_back(std::move(done));
    closed_->armAt(shared_.clock_.now());
  }
  std::optional<std::int64_t> sessionId() const override { return shared_.zk_.sessionId(); }
  void create(const std::string& path, const std::string& data, ZkCreateMode mode,
              std::function<void(ZkResult, std::string, ZkStat)> done) override {
    shared_.zk_.create(path, data, mode, std::move(done));
  }
  void remove(const std::string& path, std::int32_t version,
              std::function<void(ZkResult)> done) override {
    shared_.zk_.remove(path, version, std::move(done));
  }
  void exists(const std::string& path, std::function<void(const ZkWatchEvent&)> watcher,
              std::function<void(ZkResult, std::optional<ZkStat>)> done) override {
    shared_.zk_.exists(path, std::move(watcher), std::move(done));
  }
  void getData(const std::string& path,
               std::function<void(ZkResult, std::string, ZkStat)> done) override {
    shared_.zk_.getData(path, std::move(done));
  }
  void getChildren(const std::string& path, std::function<void(const ZkWatchEvent&)> watcher,
                   std::function<void(ZkResult, std::vector<std::string>)> done) override {
    shared_.zk_.getChildren(path, std::move(watcher), std::move(done));
  }
  void ping(std::function<void(ZkResult)> done) override { shared_.zk_.ping(std::move(done)); }

  void deliver(const ZkSessionEvent& e) {
    replay_->disarm();  // a newer event supersedes the replay
    if (e.kind == ZkSessionEvent::Kind::kConnected) heard_ = e.sessionId;
    if (handler_) handler_(e);
  }

 private:
  void replay() {
    if (!attached_ || !shared_.connected_ || !handler_) return;
    ZkSessionEvent e = *shared_.connected_;
    // Heard already (the view existed when it came): the same session again, not a new one.
    if (heard_ == e.sessionId) e.newSession = false;
    heard_ = e.sessionId;
    handler_(e);
  }
  void detach() {
    if (!attached_) return;
    attached_ = false;
    replay_->disarm();
    auto& v = shared_.views_;
    v.erase(std::remove(v.begin(), v.end(), this), v.end());
  }
  void finishClose() {
    auto done = std::move(closeDone_);
    closeDone_.clear();
    for (auto& f : done)
      f();
  }

  ZkSharedSession& shared_;
  std::function<void(const ZkSessionEvent&)> handler_;
  std::unique_ptr<time::Timer> replay_;
  std::unique_ptr<time::Timer> closed_;
  std::vector<std::function<void()>> closeDone_;
  std::optional<std::int64_t> heard_;  // the session of the last kConnected this view heard
  bool attached_ = true;
};

ZkSharedSession::ZkSharedSession(time::Clock& clock, ZkClient& zk) : clock_(clock), zk_(zk) {
  std::weak_ptr<char> alive = alive_;
  zk_.setSessionHandler([this, alive](const ZkSessionEvent& e) {
    if (!alive.expired()) onSession(e);
  });
}

ZkSharedSession::~ZkSharedSession() {
  alive_.reset();
  zk_.setSessionHandler(nullptr);
}

std::unique_ptr<ZkClient> ZkSharedSession::share() {
  return std::make_unique<View>(*this);
}

void ZkSharedSession::openOnce() {
  if (opened_) return;
  opened_ = true;
  zk_.open();
}

void ZkSharedSession::onSession(const ZkSessionEvent& e) {
  if (e.kind == ZkSessionEvent::Kind::kConnected) {
    connected_ = e;
  } else {
    connected_.reset();
  }
  // A handler may detach a view (or destroy one) while the event goes round.
  const auto views = views_;
  for (View* v : views) {
    if (std::find(views_.begin(), views_.end(), v) != views_.end()) v->deliver(e);
  }
}

}  // namespace leasehold::zookeeper
