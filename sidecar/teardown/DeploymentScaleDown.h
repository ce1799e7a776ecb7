#pragma once
// Takes a Deployment down to no pods and waits until none is left: what the chart's pre-delete
// hook runs (`leasehold scale-down`, teardown/ScaleDownCommand.h). helm uninstall deletes the
// Role together with the Deployment, so a sidecar that gets its SIGTERM after that cannot
// release its Lease (403) and the Lease names a dead holder until it expires. Taken down
// first, every sidecar releases while its Role still exists.
//
// Scaled, not deleted: a merge PATCH {"spec":{"replicas":0}} of the Deployment's scale
// subresource. Its answer (an autoscaling/v1 Scale) carries the pod selector in status.selector,
// so the whole grant is patch on deployments/scale of that one name and list/watch on pods; a
// foreground delete would need delete on the Deployment and the garbage collector's cascade.
// Then it LISTs the pods of the selector and WATCHes from the list's resourceVersion until none
// is left; a pod being deleted still counts (its sidecar may be releasing the Lease). A watch
// that ends or breaks is followed by a new LIST.
//
// Bounded: done(1) `timeout` after run() at the latest, naming the pods still there. A 403
// names the missing grant, a 401 the credentials, both done(1) at once; a 404 of the Deployment
// means there is nothing to take down, done(0). No answer, 429 and 5xx are retried every
// retryInterval until the timeout.
#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "kube/ApiTransport.h"
#include "net/LineSplitter.h"
#include "time/Clock.h"

namespace leasehold::teardown {

struct ScaleDownOptions {
  std::string ns;
  std::string deployment;
  time::Duration timeout = std::chrono::seconds(60);
  std::chrono::milliseconds requestTimeout{5000};
  time::Duration retryInterval = std::chrono::seconds(1);
  int watchTimeoutSeconds = 60;
};

// Where the progress lines and the one failure line go.
struct ScaleDownOutput {
  std::function<void(const std::string&)> info;
  std::function<void(const std::string&)> error;
};

class DeploymentScaleDown {
 public:
  DeploymentScaleDown(kube::ApiTransport& api, time::Clock& clock, ScaleDownOptions options,
                      ScaleDownOutput output);
  ~DeploymentScaleDown();
  DeploymentScaleDown(const DeploymentScaleDown&) = delete;
  DeploymentScaleDown& operator=(const DeploymentScaleDown&) = delete;

  // done(0): no pod of the Deployment left (or no Deployment); done(1): refused, failed or
  // timed out. Called once, never from inside run().
  void run(std::function<void(int)> done);

  static std::string scalePath(const std::string& ns, const std::string& deployment);
  // "labelSelector=" and SELECTOR percent-encoded (a selector's string form has '=', ',', '!',
  // spaces and parentheses).
  static std::string selectorQuery(const std::string& selector);

 private:
  void patch();
  void list();
  void watchFrom(const std::string& resourceVersion);
  void onLine(std::string_view line);
  // A transient failure of WHAT: `again` after retryInterval (the timeout still runs).
  void retryLater(const std::string& what, std::function<void()> again);
  // A final refusal or failure of ACTION (verb and object, for the message).
  void fail(const kube::ApiResponse& r, const std::string& verb, const std::string& resource,
            const std::string& name);
  void timedOut();
  void finish(int code);
  std::string deploymentName() const;
  std::string elapsed() const;

  kube::ApiTransport& api_;
  time::Clock& clock_;
  ScaleDownOptions options_;
  ScaleDownOutput out_;
  std::function<void(int)> done_;
  time::MonoTime started_{};
  std::string selector_;
  std::set<std::string> pods_;
  std::string lastProblem_;
  std::shared_ptr<kube::ApiStream> stream_;
  net::LineSplitter splitter_;
  std::unique_ptr<time::Timer> deadline_;
  std::unique_ptr<time::Timer> retryTimer_;
  std::function<void()> retry_;
  bool finished_ = false;
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace leasehold::teardown
