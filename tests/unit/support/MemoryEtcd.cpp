// MemoryEtcd (contract in MemoryEtcd.h). Why ~400 lines: a model of the parts of etcd the
// campaign uses (leases, revisions, the create-unless-exists txn, ranges, watches with replay)
// must answer in the gateway's own JSON, and splitting the model would spread one store's state.
#include "MemoryEtcd.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "net/Base64.h"

namespace leasehold::etcd::test {
namespace {

using json = nlohmann::json;

std::string b64(const std::string& s) {
  return net::Base64::encode(s);
}

std::string unb64(const json& j, const char* field) {
  const auto it = j.find(field);
  if (it == j.end()) return "";
  auto decoded = net::Base64::decode(it->get<std::string>());
  EXPECT_TRUE(decoded) << field << " is not base64";
  return decoded.value_or("");
}

std::int64_t int64(const json& j, const char* field) {
  const auto it = j.find(field);
  if (it == j.end()) return 0;
  return it->is_string() ? std::stoll(it->get<std::string>()) : it->get<std::int64_t>();
}

// As the gateway writes a KeyValue: zero values left out.
json kvJson(const KeyValue& kv) {
  json j{{"key", b64(kv.key)},
         {"create_revision", std::to_string(kv.createRevision)},
         {"mod_revision", std::to_string(kv.modRevision)},
         {"version", std::to_string(kv.version)}};
  if (!kv.value.empty()) j["value"] = b64(kv.value);
  if (kv.lease != 0) j["lease"] = std::to_string(kv.lease);
  return j;
}

bool inRange(const std::string& key, const std::string& from, const std::string& end) {
  if (end.empty()) return key == from;
  if (end == std::string(1, '\0')) return key >= from;
  return key >= from && key < end;
}

}  // namespace

struct MemoryEtcd::Watcher final : EtcdWatch {
  std::string from;
  std::string end;
  Revision next = 0;
  EtcdWatchCallbacks callbacks;
  bool live = true;
  bool frozen = false;
  void cancel() override { live = false; }
  bool active() const override { return live; }
};

MemoryEtcd::MemoryEtcd(time::FakeClock& clock) : clock_(clock) {
  expiryTimer_ = clock_.makeTimer([this] { expire(); });
}

MemoryEtcd::~MemoryEtcd() = default;

int MemoryEtcd::count(const std::string& method) const {
  return static_cast<int>(std::count(methods.begin(), methods.end(), method));
}

int MemoryEtcd::openWatches() const {
  return static_cast<int>(
      std::count_if(watchers_.begin(), watchers_.end(), [](const auto& w) { return w->live; }));
}

void MemoryEtcd::deliver(std::function<void()> f) {
  std::erase_if(pending_, [](const auto& t) { return !t->armed(); });
  std::weak_ptr<char> alive = alive_;
  auto timer = clock_.makeTimer([alive, f = std::move(f)] {
    if (!alive.expired()) f();
  });
  timer->armAt(clock_.now() + latency);
  pending_.push_back(std::move(timer));
}

void MemoryEtcd::failNext(const std::string& method, EtcdReply reply) {
  failNext_[method].push_back(std::move(reply));
}

void MemoryEtcd::setReachable(bool reachable) {
  reachable_ = reachable;
  if (!reachable) endWatches("no answer: connection refused");
}

namespace {

std::string recorded(const EtcdCall& call) {
  if (call.method == "kv/range" && json::parse(call.body).value("count_only", false))
    return "kv/range count_only";
  return call.method;
}

}  // namespace

void MemoryEtcd::call(EtcdCall call, std::function<void(EtcdReply)> done) {
  methods.push_back(recorded(call));
  EtcdReply reply;
  reply.endpoint = "memory";
  if (auto it = failNext_.find(call.method); it != failNext_.end() && !it->second.empty()) {
    reply = it->second.front();
    it->second.erase(it->second.begin());
  } else if (!reachable_) {
    return refuse(std::move(done));
  } else {
    reply.body = apply(call.method, call.body, reply);
    if (loseAnswers) {
      reply = EtcdReply{};
      reply.message = "no answer from memory: connection reset";
    }
  }
  deliver([done = std::move(done), reply = std::move(reply)] { done(reply); });
}

std::string MemoryEtcd::header() const {
  return header(raftTerm);
}

std::string MemoryEtcd::header(std::uint64_t term) const {
  return json{{"cluster_id", "1"},
              {"member_id", "2"},
              {"revision", std::to_string(revision_)},
              {"raft_term", std::to_string(term)}}
      .dump();
}

std::string MemoryEtcd::apply(const std::string& method, const std::string& body,
                              EtcdReply& reply) {
  expire();  // a lease whose time is up is gone, whether or not the expiry timer ran yet
  const json request = json::parse(body);
  const json head = json::parse(header());
  reply.kind = EtcdReply::Kind::kOk;
  auto notFound = [&](const std::string& message) {
    reply.kind = EtcdReply::Kind::kRejected;
    reply.code = kCodeNotFound;
    reply.message = "memory answered 404: " + message + " (code 5)";
    return std::string();
  };
  if (method == "lease/grant") {
    const auto ttl = int64(request, "TTL");
    const LeaseId id = nextLease_++;
    leases_[id] = Lease{ttl, clock_.now() + std::chrono::seconds(ttl)};
    armExpiry();
    return json{{"header", head}, {"ID", std::to_string(id)}, {"TTL", std::to_string(ttl)}}.dump();
  }
  if (method == "lease/keepalive") {
    const LeaseId id = int64(request, "ID");
    json result{{"header", head}, {"ID", std::to_string(id)}};
    if (staleKeepAliveTerm) {
      result["header"] = json::parse(header(*staleKeepAliveTerm));
      if (auto it = leases_.find(id); it != leases_.end())
        result["TTL"] = std::to_string(it->second.ttlSeconds);
    } else if (auto it = leases_.find(id); it != leases_.end()) {
      it->second.expiresAt = clock_.now() + std::chrono::seconds(it->second.ttlSeconds);
      armExpiry();
      result["TTL"] = std::to_string(it->second.ttlSeconds);
    }
    return json{{"result", result}}.dump();
  }
  if (method == "lease/revoke") {
    const LeaseId id = int64(request, "ID");
    if (!leases_.count(id)) return notFound("etcdserver: requested lease not found");
    dropLease(id);
    return json{{"header", json::parse(header())}}.dump();
  }
  if (method == "kv/txn") {
    // Only the campaign's create-unless-exists.
    const auto& compare = request.at("compare").at(0);
    EXPECT_EQ(compare.at("target"), "CREATE");
    const std::string key = unb64(compare, "key");
    if (kvs_.count(key)) {
      json range{{"header", head}, {"kvs", json::array({kvJson(kvs_[key])})}, {"count", "1"}};
      return json{{"header", head}, {"responses", json::array({{{"response_range", range}}})}}
          .dump();
    }
    const auto& request_put = request.at("success").at(0).at("request_put");
    const LeaseId lease = int64(request_put, "lease");
    if (lease != 0 && !leases_.count(lease))
      return notFound("etcdserver: requested lease not found");
    put(key, unb64(request_put, "value"), lease);
    json h = json::parse(header());
    return json{{"header", h},
                {"succeeded", true},
                {"responses", json::array({{{"response_put", {{"header", h}}}}})}}
        .dump();
  }
  if (method == "kv/range") {
    const std::string from = unb64(request, "key");
    const std::string end = unb64(request, "range_end");
    const auto maxCreate = int64(request, "max_create_revision");
    const auto limit = int64(request, "limit");
    if (request.value("count_only", false)) countedKeys.push_back(from);
    std::vector<KeyValue> found;
    for (const auto& [k, kv] : kvs_) {
      if (inRange(k, from, end) && (maxCreate == 0 || kv.createRevision <= maxCreate)) {
        found.push_back(kv);
      }
    }
    if (request.value("sort_target", "") == "CREATE") {
      std::sort(found.begin(), found.end(),
                [](const auto& a, const auto& b) { return a.createRevision < b.createRevision; });
    }
    if (request.value("sort_order", "") == "DESCEND") std::reverse(found.begin(), found.end());
    const auto total = found.size();
    if (limit > 0 && found.size() > static_cast<std::size_t>(limit)) found.resize(limit);
    json out{{"header", head}};
    if (!found.empty() && !request.value("count_only", false)) {
      out["kvs"] = json::array();
      for (const auto& kv : found)
        out["kvs"].push_back(kvJson(kv));
    }
    if (total) out["count"] = std::to_string(total);
    return out.dump();
  }
  ADD_FAILURE() << "MemoryEtcd: a method it does not model: " << method << " " << body;
  reply.kind = EtcdReply::Kind::kRejected;
  reply.message = "not modelled";
  return "";
}

Revision MemoryEtcd::put(const std::string& key, const std::string& value, LeaseId lease) {
  ++revision_;
  KeyValue kv;
  if (auto it = kvs_.find(key); it != kvs_.end()) {
    kv = it->second;
    ++kv.version;
  } else {
    kv.key = key;
    kv.createRevision = revision_;
    kv.version = 1;
  }
  kv.value = value;
  kv.modRevision = revision_;
  kv.lease = lease;
  kvs_[key] = kv;
  record(Event{revision_, false, kv});
  return revision_;
}

void MemoryEtcd::remove(const std::string& key) {
  if (kvs_.count(key)) deleteKey(key);
}

void MemoryEtcd::deleteKey(const std::string& key) {
  ++revision_;
  KeyValue gone;
  gone.key = key;
  gone.modRevision = revision_;
  kvs_.erase(key);
  record(Event{revision_, true, gone});
}

std::optional<KeyValue> MemoryEtcd::get(const std::string& key) const {
  const auto it = kvs_.find(key);
  if (it == kvs_.end()) return std::nullopt;
  return it->second;
}

std::vector<KeyValue> MemoryEtcd::keysUnder(const std::string& prefix) const {
  std::vector<KeyValue> out;
  for (const auto& [k, kv] : kvs_) {
    if (k.rfind(prefix, 0) == 0) out.push_back(kv);
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.createRevision < b.createRevision; });
  return out;
}

void MemoryEtcd::dropLease(LeaseId id) {
  leases_.erase(id);
  std::vector<std::string> keys;  // its keys go with it, as on the server
  for (const auto& [k, kv] : kvs_) {
    if (kv.lease == id) keys.push_back(k);
  }
  for (const auto& k : keys)
    deleteKey(k);
}

void MemoryEtcd::armExpiry() {
  if (leases_.empty()) return expiryTimer_->disarm();
  auto soonest = leases_.begin()->second.expiresAt;
  for (const auto& [id, l] : leases_)
    soonest = std::min(soonest, l.expiresAt);
  expiryTimer_->armAt(soonest);
}

void MemoryEtcd::expire() {
  std::vector<LeaseId> gone;
  for (const auto& [id, l] : leases_) {
    if (l.expiresAt <= clock_.now()) gone.push_back(id);
  }
  for (const LeaseId id : gone)
    dropLease(id);
  armExpiry();
}

void MemoryEtcd::record(Event e) {
  history_.push_back(std::move(e));
  for (auto& w : watchers_) {
    if (w->live) pump(*w);
  }
}

void MemoryEtcd::pump(Watcher& w) {
  if (w.frozen) return;
  WatchMessage m;
  for (const auto& e : history_) {
    if (e.revision < w.next || !inRange(e.kv.key, w.from, w.end)) continue;
    WatchEvent we;
    we.type = e.deleted ? WatchEvent::Type::kDelete : WatchEvent::Type::kPut;
    we.kv = e.kv;
    m.events.push_back(we);
  }
  w.next = revision_ + 1;
  if (m.events.empty()) return;
  m.header.revision = revision_;
  std::weak_ptr<Watcher> weak;
  for (auto& shared : watchers_) {
    if (shared.get() == &w) weak = shared;
  }
  deliver([weak, m] {
    if (auto w = weak.lock(); w && w->live) w->callbacks.onMessage(m);
  });
}

std::shared_ptr<EtcdWatch> MemoryEtcd::watch(std::string createRequest,
                                             EtcdWatchCallbacks callbacks,
                                             std::chrono::milliseconds, std::chrono::milliseconds) {
  methods.push_back("watch");
  if (!reachable_) return refusedWatch(std::move(callbacks));
  auto w = std::make_shared<Watcher>();
  w->callbacks = std::move(callbacks);
  const json create = json::parse(createRequest).at("create_request");
  w->from = unb64(create, "key");
  w->end = unb64(create, "range_end");
  w->next = int64(create, "start_revision");
  if (w->next == 0) w->next = revision_ + 1;
  watchers_.push_back(w);
  std::weak_ptr<Watcher> weak = w;
  WatchMessage created;
  created.created = true;
  created.header.revision = revision_;
  deliver([weak, created] {
    if (auto w = weak.lock(); w && w->live) w->callbacks.onMessage(created);
  });
  pump(*w);
  return w;
}

void MemoryEtcd::refuse(std::function<void(EtcdReply)> done) {
  EtcdReply reply;
  reply.endpoint = "memory";
  reply.message = "no answer from memory: connection refused";
  deliver([done = std::move(done), reply = std::move(reply)] { done(reply); });
}

std::shared_ptr<EtcdWatch> MemoryEtcd::refusedWatch(EtcdWatchCallbacks callbacks) {
  auto w = std::make_shared<Watcher>();
  w->callbacks = std::move(callbacks);
  std::weak_ptr<Watcher> weak = w;
  deliver([weak] {
    if (auto w = weak.lock(); w && w->live) {
      w->live = false;
      w->callbacks.onEnd("no answer from memory: connection refused");
    }
  });
  return w;
}

void MemoryEtcd::Link::call(EtcdCall call, std::function<void(EtcdReply)> done) {
  if (!reachable_) {
    etcd_.methods.push_back(recorded(call));
    return etcd_.refuse(std::move(done));
  }
  etcd_.call(std::move(call), std::move(done));
}

std::shared_ptr<EtcdWatch> MemoryEtcd::Link::watch(std::string createRequest,
                                                   EtcdWatchCallbacks callbacks,
                                                   std::chrono::milliseconds openDeadline,
                                                   std::chrono::milliseconds idleTimeout) {
  if (!reachable_) return etcd_.refusedWatch(std::move(callbacks));
  auto w = etcd_.watch(std::move(createRequest), std::move(callbacks), openDeadline, idleTimeout);
  watches_.push_back(w);
  return w;
}

void MemoryEtcd::Link::setReachable(bool reachable) {
  reachable_ = reachable;
  if (reachable) return;
  for (auto& weak : watches_) {
    auto w = std::static_pointer_cast<Watcher>(weak.lock());
    if (!w || !w->live) continue;
    std::weak_ptr<Watcher> ended = w;
    etcd_.deliver([ended] {
      if (auto w = ended.lock(); w && w->live) {
        w->live = false;
        w->callbacks.onEnd("no answer from memory: connection reset");
      }
    });
  }
  watches_.clear();
}

void MemoryEtcd::freezeWatches() {
  for (auto& w : watchers_)
    w->frozen = true;
}

void MemoryEtcd::endWatches(const std::string& why) {
  for (auto& w : watchers_) {
    if (!w->live) continue;
    std::weak_ptr<Watcher> weak = w;
    deliver([weak, why] {
      if (auto w = weak.lock(); w && w->live) {
        w->live = false;
        w->callbacks.onEnd(why);
      }
    });
  }
  watchers_.clear();
}

}  // namespace leasehold::etcd::test
