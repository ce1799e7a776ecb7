#include "teardown/DeploymentScaleDown.h"

#include <cctype>
#include <nlohmann/json.hpp>

#include "kube/RefusalHint.h"

namespace leasehold::teardown {
namespace {

bool transient(const kube::ApiResponse& r) {
  return r.code == 0 || r.code == 429 || r.code >= 500;
}

std::string podList(const std::set<std::string>& pods) {
  std::string out;
  for (const auto& p : pods)
    out += (out.empty() ? "" : ", ") + p;
  return out;
}

}  // namespace

DeploymentScaleDown::DeploymentScaleDown(kube::ApiTransport& api, time::Clock& clock,
                                         ScaleDownOptions options, ScaleDownOutput output)
    : api_(api),
      clock_(clock),
      options_(std::move(options)),
      out_(std::move(output)),
      deadline_(clock.makeTimer([this] { timedOut(); })),
      retryTimer_(clock.makeTimer([this] {
        if (auto again = std::move(retry_)) again();
      })) {}

DeploymentScaleDown::~DeploymentScaleDown() {
  if (stream_) stream_->cancel();
}

std::string DeploymentScaleDown::scalePath(const std::string& ns, const std::string& deployment) {
  return "/apis/apps/v1/namespaces/" + ns + "/deployments/" + deployment + "/scale";
}

std::string DeploymentScaleDown::selectorQuery(const std::string& selector) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out = "labelSelector=";
  for (unsigned char c : selector) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string DeploymentScaleDown::deploymentName() const {
  return "deployment " + options_.ns + "/" + options_.deployment;
}

std::string DeploymentScaleDown::elapsed() const {
  return time::formatDuration(clock_.now() - started_);
}

void DeploymentScaleDown::run(std::function<void(int)> done) {
  done_ = std::move(done);
  started_ = clock_.now();
  deadline_->armAt(started_ + options_.timeout);
  patch();
}

void DeploymentScaleDown::finish(int code) {
  if (finished_) return;
  finished_ = true;
  deadline_->disarm();
  retryTimer_->disarm();
  retry_ = nullptr;
  if (stream_) {
    stream_->cancel();
    stream_.reset();
  }
  done_(code);
}

void DeploymentScaleDown::timedOut() {
  if (finished_) return;
  std::string what;
  if (selector_.empty()) {
    what = "before " + deploymentName() + " was scaled to 0";
  } else {
    what = "waiting for the pods of " + deploymentName() + " (" + selector_ + ") to go";
    if (!pods_.empty()) {
      what += "; still there: " + podList(pods_) +
              " (is their terminationGracePeriodSeconds longer than --timeout?)";
    }
  }
  out_.error("leasehold scale-down: timed out after " + time::formatDuration(options_.timeout) +
             " " + what + (lastProblem_.empty() ? "" : "; last problem: " + lastProblem_));
  finish(1);
}

void DeploymentScaleDown::retryLater(const std::string& what, std::function<void()> again) {
  lastProblem_ = what;
  out_.info(what + "; retrying in " + time::formatDuration(options_.retryInterval));
  retry_ = std::move(again);
  retryTimer_->armAt(clock_.now() + options_.retryInterval);
}

void DeploymentScaleDown::fail(const kube::ApiResponse& r, const std::string& verb,
                               const std::string& resource, const std::string& name) {
  const std::string group = resource.rfind("deployments", 0) == 0 ? "apps" : "";
  std::string why;
  if (r.code == 403) {
    why = kube::missingGrant(verb, group, resource, name);
  } else if (r.code == 401) {
    why = kube::refusalHint(kube::Connection::kSide, verb, 401);
  } else {
    why = r.describe();
  }
  out_.error("leasehold scale-down: " + verb + " " + resource +
             (name.empty() ? "" : " \"" + name + "\"") + " in namespace \"" + options_.ns +
             "\" failed (" + std::to_string(r.code) + "): " + why);
  finish(1);
}

void DeploymentScaleDown::patch() {
  std::weak_ptr<char> alive = alive_;
  api_.call({"patch", "PATCH", scalePath(options_.ns, options_.deployment),
             R"({"spec":{"replicas":0}})", "application/merge-patch+json", options_.requestTimeout},
            [this, alive](kube::ApiResponse r) {
              if (alive.expired() || finished_) return;
              if (r.code == 404) {
                out_.info(deploymentName() + " not found: nothing to scale down");
                return finish(0);
              }
              if (transient(r)) {
                return retryLater("scaling " + deploymentName() + ": " + r.describe(),
                                  [this] { patch(); });
              }
              if (!r.ok()) return fail(r, "patch", "deployments/scale", options_.deployment);
              const auto scale = nlohmann::json::parse(r.body, nullptr, false);
              const nlohmann::json* selector = nullptr;
              if (scale.is_object() && scale.contains("status") && scale["status"].is_object() &&
                  scale["status"].contains("selector")) {
                selector = &scale["status"]["selector"];
              }
              if (!selector || !selector->is_string() || selector->get<std::string>().empty()) {
                // An empty selector would match every pod of the namespace: never wait on it.
                out_.error("leasehold scale-down: the answer to scaling " + deploymentName() +
                           " has no status.selector: " + r.body.substr(0, 200));
                return finish(1);
              }
              selector_ = selector->get<std::string>();
              // status.replicas: the pods the controller counted before this change.
              const int had = scale["status"].value("replicas", 0);
              out_.info(deploymentName() + " scaled to 0 replicas (its status had " +
                        std::to_string(had) + "); waiting up to " +
                        time::formatDuration(options_.timeout) + " for its pods (" + selector_ +
                        ") to go");
              list();
            });
}

void DeploymentScaleDown::list() {
  std::weak_ptr<char> alive = alive_;
  api_.call(
      {"list", "GET", "/api/v1/namespaces/" + options_.ns + "/pods?" + selectorQuery(selector_), "",
       "application/json", options_.requestTimeout},
      [this, alive](kube::ApiResponse r) {
        if (alive.expired() || finished_) return;
        if (transient(r)) {
          return retryLater("listing the pods: " + r.describe(), [this] { list(); });
        }
        if (!r.ok()) return fail(r, "list", "pods", "");
        const auto body = nlohmann::json::parse(r.body, nullptr, false);
        if (!body.is_object() || !body.contains("items") || !body["items"].is_array()) {
          return retryLater("listing the pods: an answer that is no list", [this] { list(); });
        }
        pods_.clear();
        for (const auto& item : body["items"]) {
          if (item.contains("metadata") && item["metadata"].is_object())
            pods_.insert(item["metadata"].value("name", ""));
        }
        if (pods_.empty()) {
          out_.info("no pod of " + deploymentName() + " left after " + elapsed());
          return finish(0);
        }
        out_.info(std::to_string(pods_.size()) + " pods left: " + podList(pods_));
        std::string rv;
        if (body.contains("metadata") && body["metadata"].is_object())
          rv = body["metadata"].value("resourceVersion", "");
        watchFrom(rv);
      });
}

void DeploymentScaleDown::watchFrom(const std::string& resourceVersion) {
  std::weak_ptr<char> alive = alive_;
  const std::string path = "/api/v1/namespaces/" + options_.ns + "/pods?" +
                           selectorQuery(selector_) + "&resourceVersion=" + resourceVersion +
                           "&timeoutSeconds=" + std::to_string(options_.watchTimeoutSeconds) +
                           "&watch=true";
  splitter_.reset();
  kube::ApiStreamCallbacks cb;
  cb.onStatus = [this, alive](int status, const std::string& body) {
    if (alive.expired() || finished_) return;
    stream_.reset();
    kube::ApiResponse r;
    r.code = status;
    kube::ApiStatus s;
    if (kube::decodeStatus(body, s)) r.status = s;
    if (status == 410) return list();  // the list's resourceVersion is too old already
    if (transient(r)) return retryLater("watching the pods: " + r.describe(), [this] { list(); });
    fail(r, "watch", "pods", "");
  };
  cb.onData = [this, alive](std::string_view bytes) {
    if (alive.expired() || finished_) return;
    if (!splitter_.feed(bytes, [this](std::string_view line) { onLine(line); }) && stream_) {
      stream_->cancel();
      stream_.reset();
      retryLater("watching the pods: a line too long", [this] { list(); });
    }
  };
  cb.onEnd = [this, alive](std::optional<std::string> error) {
    if (alive.expired() || finished_) return;
    stream_.reset();
    if (error) return retryLater("watching the pods: " + *error, [this] { list(); });
    list();  // timeoutSeconds passed: list again (a pod may have gone meanwhile)
  };
  stream_ = api_.stream({"watch", "GET", path, "", "application/json", options_.requestTimeout},
                        std::move(cb), std::chrono::seconds(options_.watchTimeoutSeconds + 30));
}

void DeploymentScaleDown::onLine(std::string_view line) {
  if (line.empty() || !stream_ || finished_) return;
  const auto event = nlohmann::json::parse(line, nullptr, false);
  const std::string type = event.is_object() ? event.value("type", "") : "";
  const auto* object = event.is_object() && event.contains("object") ? &event["object"] : nullptr;
  std::string name;
  if (object && object->is_object() && object->contains("metadata") &&
      (*object)["metadata"].is_object()) {
    name = (*object)["metadata"].value("name", "");
  }
  if (type == "BOOKMARK") return;
  if (type == "ERROR" || name.empty() ||
      (type != "ADDED" && type != "MODIFIED" && type != "DELETED")) {
    // 410 Expired: the list is too old, list again at once; anything else after a pause. A new
    // list tells the truth either way.
    stream_->cancel();
    stream_.reset();
    kube::ApiStatus status;
    if (type == "ERROR" && object && kube::decodeStatus(object->dump(), status) &&
        status.code == 410) {
      return list();
    }
    return retryLater("watching the pods: " + std::string(line.substr(0, 200)), [this] { list(); });
  }
  if (type == "DELETED") {
    pods_.erase(name);
    out_.info("pod " + name + " gone after " + elapsed());
  } else {
    pods_.insert(name);
  }
  if (pods_.empty()) {
    out_.info("no pod of " + deploymentName() + " left after " + elapsed());
    finish(0);
  }
}

}  // namespace leasehold::teardown
