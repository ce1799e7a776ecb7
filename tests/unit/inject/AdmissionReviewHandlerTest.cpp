// The review -> response logic of `leasehold inject`, table-driven: the pods the chart's policies
// are tested with on the real API server (tests/deploy/test_injector_real.py), here with the
// patch applied (nlohmann's RFC 6902 patch) and the result compared field by field.
#include "inject/AdmissionReviewHandler.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "InjectorParamsData.h"
#include "net/Base64.h"

namespace leasehold::inject {
namespace {

using nlohmann::json;

InjectorParams chartParams() {
  auto parsed = InjectorParams::fromData(testing::injectorParamsData());
  return std::get<InjectorParams>(parsed);
}

json userPod(json annotations = {{"leasehold.io/lease", "shop"}},
             json labels = {{"leasehold.io/inject", "true"}}) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", "shop"}, {"labels", labels}, {"annotations", annotations}}},
          {"spec",
           {{"containers",
             json::array(
                 {{{"name", "web"},
                   {"image", "shop/web:1.2"},
                   {"env", json::array({{{"name", "DB_PASSWORD"}, {"value", "hunter2-secret"}}})},
                   {"volumeMounts", json::array({{{"name", "cache"}, {"mountPath", "/cache"}}})}},
                  {{"name", "worker"}, {"image", "shop/worker:1.2"}}})},
            {"volumes", json::array({{{"name", "cache"}, {"emptyDir", json::object()}}})}}}};
}

json review(const json& pod, std::string operation = "CREATE", std::string ns = "shop",
            json resource = {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}) {
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"request",
           {{"uid", "705ab4f5-6393-11e8-b7cc-42010a800002"},
            {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
            {"resource", resource},
            {"namespace", ns},
            {"operation", operation},
            {"object", pod}}}};
}

json responseOf(const AdmissionReply& reply) {
  EXPECT_EQ(reply.httpStatus, 200) << reply.body;
  EXPECT_EQ(reply.contentType, "application/json");
  const json out = json::parse(reply.body);
  EXPECT_EQ(out.at("apiVersion"), "admission.k8s.io/v1");
  EXPECT_EQ(out.at("kind"), "AdmissionReview");
  EXPECT_EQ(out.at("response").at("uid"), "705ab4f5-6393-11e8-b7cc-42010a800002");
  return out.at("response");
}

// The pod after the response's patch (the pod itself when there is none).
json admitted(const json& pod, const json& response) {
  EXPECT_TRUE(response.at("allowed").get<bool>()) << response.dump();
  if (!response.contains("patch")) return pod;
  EXPECT_EQ(response.at("patchType"), "JSONPatch");
  const auto patch = net::Base64::decode(response.at("patch").get<std::string>());
  EXPECT_TRUE(patch);
  return pod.patch(json::parse(*patch));
}

json reviewed(const json& pod, const ParamsState& params = chartParams()) {
  return responseOf(AdmissionReviewHandler::handle(review(pod).dump(), params));
}

const json kStatusMount = {
    {"name", "leasehold-status"}, {"mountPath", "/var/run/leasehold"}, {"readOnly", true}};

TEST(AdmissionReviewHandler, InjectsTheSidecarAsTheChartsPolicyDoes) {
  const json pod = userPod();
  const json after = admitted(pod, reviewed(pod));
  const json& side = after["spec"]["initContainers"][0];
  ASSERT_EQ(after["spec"]["initContainers"].size(), 1u);
  EXPECT_EQ(side["name"], "leasehold");
  EXPECT_EQ(side["image"], "ghcr.io/leasehold/leasehold:1.0");
  EXPECT_EQ(side["imagePullPolicy"], "IfNotPresent");
  EXPECT_EQ(side["restartPolicy"], "Always");
  EXPECT_EQ(
      side["args"],
      json::array({"--lease-name=shop", "--lease-duration=15s", "--renew-deadline=10s",
                   "--retry-period=2s", "--http-address=127.0.0.1:4040",
                   "--probe-address=0.0.0.0:9102", "--status-file=/var/run/leasehold/status.json",
                   "--log-format=json", "--log-level=info"}));
  EXPECT_EQ(side["env"].size(), 3u);
  EXPECT_EQ(side["env"][2], json({{"name", "POD_IP"},
                                  {"valueFrom", {{"fieldRef", {{"fieldPath", "status.podIP"}}}}}}));
  EXPECT_EQ(side["ports"],
            json::array({{{"name", "lh-probes"}, {"containerPort", 9102}, {"protocol", "TCP"}}}));
  EXPECT_EQ(side["startupProbe"], json({{"httpGet", {{"path", "/healthz"}, {"port", "lh-probes"}}},
                                        {"periodSeconds", 1},
                                        {"failureThreshold", 30}}));
  EXPECT_EQ(side["readinessProbe"]["httpGet"]["path"], "/readyz");
  EXPECT_EQ(side["livenessProbe"]["failureThreshold"], 3);
  EXPECT_EQ(side["resources"], json({{"requests", {{"cpu", "10m"}, {"memory", "16Mi"}}},
                                     {"limits", {{"memory", "64Mi"}}}}));
  EXPECT_EQ(side["securityContext"]["runAsUser"], 65532);
  EXPECT_EQ(side["securityContext"]["capabilities"]["drop"], json::array({"ALL"}));
  EXPECT_EQ(side["volumeMounts"],
            json::array({{{"name", "leasehold-status"}, {"mountPath", "/var/run/leasehold"}}}));
  EXPECT_EQ(after["spec"]["volumes"][1],
            json({{"name", "leasehold-status"},
                  {"emptyDir", {{"medium", "Memory"}, {"sizeLimit", "1Mi"}}}}));
  EXPECT_EQ(after["spec"]["containers"][0]["volumeMounts"],
            json::array({{{"name", "cache"}, {"mountPath", "/cache"}}, kStatusMount}));
  EXPECT_EQ(after["spec"]["containers"][1]["volumeMounts"], json::array({kStatusMount}));
  // Nothing else changed.
  json rest = after;
  rest["spec"].erase("initContainers");
  rest["spec"]["volumes"].erase(1);
  rest["spec"]["containers"][0]["volumeMounts"].erase(1);
  rest["spec"]["containers"][1].erase("volumeMounts");
  EXPECT_EQ(rest, pod);
}

TEST(AdmissionReviewHandler, PutsTheSidecarFirstAndAddsWholeListsWhereThePodHasNone) {
  struct Case {
    const char* what;
    json spec;  // merged into the user's pod's spec
    std::vector<std::string> inits;
    std::vector<std::string> volumes;
  };
  const std::vector<Case> cases = {
      {"init containers present",
       {{"initContainers", json::array({{{"name", "migrate"}}})}},
       {"leasehold", "migrate"},
       {"cache", "leasehold-status"}},
      {"init containers an empty list",
       {{"initContainers", json::array()}},
       {"leasehold"},
       {"cache", "leasehold-status"}},
      {"no volumes", {{"volumes", nullptr}}, {"leasehold"}, {"leasehold-status"}},
      {"volumes an empty list", {{"volumes", json::array()}}, {"leasehold"}, {"leasehold-status"}},
  };
  for (const auto& c : cases) {
    json pod = userPod();
    pod["spec"].merge_patch(c.spec);
    const json after = admitted(pod, reviewed(pod));
    std::vector<std::string> inits, volumes;
    for (const auto& i : after["spec"]["initContainers"])
      inits.push_back(i["name"]);
    for (const auto& v : after["spec"]["volumes"])
      volumes.push_back(v["name"]);
    EXPECT_EQ(inits, c.inits) << c.what;
    EXPECT_EQ(volumes, c.volumes) << c.what;
  }
}

TEST(AdmissionReviewHandler, AnnotationsReachTheFlagsInThePolicysOrder) {
  const json pod = userPod({{"leasehold.io/lease", "shop"},
                            {"leasehold.io/lease-duration", "30s"},
                            {"leasehold.io/renew-deadline", "20s"},
                            {"leasehold.io/retry-period", "1.5s"},
                            {"leasehold.io/shards", "4"}});
  const json after = admitted(pod, reviewed(pod));
  EXPECT_EQ(
      after["spec"]["initContainers"][0]["args"],
      json::array({"--lease-name=shop", "--lease-duration=30s", "--renew-deadline=20s",
                   "--retry-period=1.5s", "--http-address=127.0.0.1:4040",
                   "--probe-address=0.0.0.0:9102", "--status-file=/var/run/leasehold/status.json",
                   "--shards=4", "--log-format=json", "--log-level=info"}));
}

// leasehold.io/fast-failover: "true": --fast-failover instead of the status file, the pod's
// UID and the container's own name in the env, and no volume or mount for a status file.
TEST(AdmissionReviewHandler, FastFailoverGetsItsEnvAndNoStatusFile) {
  const json pod =
      userPod({{"leasehold.io/lease", "shop"}, {"leasehold.io/fast-failover", "true"}});
  const json after = admitted(pod, reviewed(pod));
  const json& side = after["spec"]["initContainers"][0];
  EXPECT_EQ(side["args"],
            json::array({"--lease-name=shop", "--lease-duration=15s", "--renew-deadline=10s",
                         "--retry-period=2s", "--http-address=127.0.0.1:4040",
                         "--probe-address=0.0.0.0:9102", "--fast-failover", "--log-format=json",
                         "--log-level=info"}));
  ASSERT_EQ(side["env"].size(), 5u);
  EXPECT_EQ(side["env"][3], json({{"name", "POD_UID"},
                                  {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.uid"}}}}}}));
  EXPECT_EQ(side["env"][4], json({{"name", "LEASEHOLD_CONTAINER"}, {"value", "leasehold"}}));
  EXPECT_FALSE(side.contains("volumeMounts"));
  json rest = after;
  rest["spec"].erase("initContainers");
  EXPECT_EQ(rest, pod);  // no volume, no mount in the app's containers
  // "false" is as good as no annotation.
  const json off =
      userPod({{"leasehold.io/lease", "shop"}, {"leasehold.io/fast-failover", "false"}});
  const json plain = admitted(userPod(), reviewed(userPod()));
  json withOff = admitted(off, reviewed(off));
  withOff["metadata"] = plain["metadata"];
  EXPECT_EQ(withOff, plain);
}

TEST(AdmissionReviewHandler, RefusesEachBadAnnotationWithThePolicysMessage) {
  const std::vector<std::pair<json, std::string>> cases = {
      {json::object(),
       "leasehold.io/inject is \"true\" but the annotation leasehold.io/lease (the name of the "
       "Lease the replicas compete for) is missing"},
      {{{"leasehold.io/lease", "Shop_DB"}},
       "leasehold.io/lease: \"Shop_DB\" is not a valid Lease name (a DNS subdomain: lower-case "
       "letters, digits, - and .)"},
      {{{"leasehold.io/lease", std::string(254, 'a')}},
       "leasehold.io/lease: \"" + std::string(254, 'a') + "\" is not a valid Lease name"},
      {{{"leasehold.io/lease", "shop"}, {"leasehold.io/lease-duration", "1500ms"}},
       "leasehold.io/lease-duration: \"1500ms\" is not a duration in whole seconds (15s, 1m)"},
      {{{"leasehold.io/lease", "shop"}, {"leasehold.io/renew-deadline", "10"}},
       "leasehold.io/renew-deadline: \"10\" is not a duration (10s, 1.5s, 500ms)"},
      {{{"leasehold.io/lease", "shop"}, {"leasehold.io/retry-period", "2"}},
       "leasehold.io/retry-period: \"2\" is not a duration (2s, 1.5s, 500ms)"},
      {{{"leasehold.io/lease", "shop"}, {"leasehold.io/retry-period", "0s"}},
       "retry period 0s (leasehold.io/retry-period or the injector's default) must be greater "
       "than 0"},
      {{{"leasehold.io/lease", "shop"}, {"leasehold.io/retry-period", "9s"}},
       "renew deadline 10s must be greater than 1.2 x retry period 9s (leasehold.io/renew-"
       "deadline, leasehold.io/retry-period or the injector's defaults)"},
      // 1.2 x 2s = 2.4s exactly is not greater.
      {{{"leasehold.io/lease", "shop"}, {"leasehold.io/renew-deadline", "2400ms"}},
       "renew deadline 2400ms must be greater than 1.2 x retry period 2s"},
      {{{"leasehold.io/lease", "shop"}, {"leasehold.io/renew-deadline", "16s"}},
       "lease duration 15s must be greater than renew deadline 16s (leasehold.io/lease-duration, "
       "leasehold.io/renew-deadline or the injector's defaults)"},
      {{{"leasehold.io/lease", "shop"}, {"leasehold.io/lease-duration", "10s"}},
       "lease duration 10s must be greater than renew deadline 10s"},
      {{{"leasehold.io/lease", "shop"}, {"leasehold.io/shards", "0"}},
       "leasehold.io/shards: \"0\" is not a whole number from 1 to 1024"},
      {{{"leasehold.io/lease", "shop"}, {"leasehold.io/shards", "1025"}},
       "leasehold.io/shards: \"1025\" is not a whole number from 1 to 1024"},
      {{{"leasehold.io/lease", "shop"}, {"leasehold.io/shards", "04"}},
       "leasehold.io/shards: \"04\" is not a whole number"},
      {{{"leasehold.io/lease", "shop"}, {"leasehold.io/fast-failover", "yes"}},
       "leasehold.io/fast-failover: \"yes\" is not \"true\" or \"false\""},
      {{{"leasehold.io/lease", "shop"},
        {"leasehold.io/fast-failover", "true"},
        {"leasehold.io/shards", "4"}},
       "leasehold.io/fast-failover cannot be used with leasehold.io/shards"},
  };
  for (const auto& [notes, message] : cases) {
    const json response = reviewed(userPod(notes));
    EXPECT_FALSE(response.at("allowed").get<bool>()) << notes.dump();
    EXPECT_EQ(response.at("status").at("code"), 403) << notes.dump();
    const std::string got = response.at("status").at("message");
    EXPECT_EQ(got.rfind(message, 0), 0u) << notes.dump() << "\n got: " << got;
    EXPECT_FALSE(response.contains("patch"));
  }
}

TEST(AdmissionReviewHandler, AdmitsTheEdgesOfTheTimingRule) {
  for (const json& notes : {
           json{{"leasehold.io/lease", "a.b-c"}, {"leasehold.io/renew-deadline", "2401ms"}},
           json{{"leasehold.io/lease", "shop"},
                {"leasehold.io/lease-duration", "1m"},
                {"leasehold.io/renew-deadline", "59.5s"},
                {"leasehold.io/retry-period", ".5s"}},
           json{{"leasehold.io/lease", "shop"}, {"leasehold.io/retry-period", "500\xC2\xB5s"}},
           json{{"leasehold.io/lease", "shop"}, {"leasehold.io/shards", "1024"}},
       }) {
    const json response = reviewed(userPod(notes));
    EXPECT_TRUE(response.at("allowed").get<bool>()) << notes.dump() << response.dump();
    EXPECT_TRUE(response.contains("patch")) << notes.dump();
  }
}

TEST(AdmissionReviewHandler, LeavesAloneWhatItDoesNotInject) {
  json withSidecarInit = userPod();
  withSidecarInit["spec"]["initContainers"] = json::array({{{"name", "leasehold"}}});
  json withSidecarApp = userPod();
  withSidecarApp["spec"]["containers"].push_back({{"name", "leasehold"}});
  const std::vector<std::pair<const char*, json>> cases = {
      {"no label", review(userPod({{"leasehold.io/lease", "shop"}}, json::object()))},
      {"label not \"true\"",
       review(userPod({{"leasehold.io/lease", "shop"}}, {{"leasehold.io/inject", "yes"}}))},
      {"an UPDATE", review(userPod(), "UPDATE")},
      {"kube-system", review(userPod(), "CREATE", "kube-system")},
      {"not a pod", review(userPod(), "CREATE", "shop",
                           {{"group", "apps"}, {"version", "v1"}, {"resource", "deployments"}})},
      {"a leasehold init container already", review(withSidecarInit)},
      {"a leasehold app container already", review(withSidecarApp)},
  };
  for (const auto& [what, input] : cases) {
    const json response = responseOf(AdmissionReviewHandler::handle(input.dump(), chartParams()));
    EXPECT_TRUE(response.at("allowed").get<bool>()) << what;
    EXPECT_FALSE(response.contains("patch")) << what;
    EXPECT_FALSE(response.contains("warnings")) << what;
  }
}

TEST(AdmissionReviewHandler, IsIdempotent) {
  const json pod = userPod();
  const json once = admitted(pod, reviewed(pod));
  const json response = reviewed(once);
  EXPECT_FALSE(response.contains("patch"));
  EXPECT_EQ(admitted(once, response), once);
}

TEST(AdmissionReviewHandler, AdmitsWithAWarningWithoutUsableParameters) {
  const json response = reviewed(userPod(), std::string("/params: key image is missing"));
  EXPECT_TRUE(response.at("allowed").get<bool>());
  EXPECT_FALSE(response.contains("patch"));
  ASSERT_EQ(response.at("warnings").size(), 1u);
  const std::string warning = response.at("warnings")[0];
  EXPECT_NE(warning.find("no leasehold sidecar was injected: this pod will never lead"),
            std::string::npos);
  EXPECT_NE(warning.find("/params: key image is missing"), std::string::npos) << warning;

  json withSidecar = userPod();
  withSidecar["spec"]["initContainers"] = json::array({{{"name", "leasehold"}}});
  const json own = reviewed(withSidecar, std::string("/params: key image is missing"));
  EXPECT_TRUE(own.at("allowed").get<bool>());
  EXPECT_FALSE(own.contains("warnings")) << "a pod with its own sidecar leads: no warning";
}

TEST(AdmissionReviewHandler, AnswersBadReviewsWith400) {
  json noUid = review(userPod());
  noUid["request"].erase("uid");
  json v1beta1 = review(userPod());
  v1beta1["apiVersion"] = "admission.k8s.io/v1beta1";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "the request body is not JSON"},
      {"{\"apiVersion\": ", "the request body is not JSON"},
      {"[1, 2]", "the request body is not a JSON object"},
      {json{{"apiVersion", "v1"}, {"kind", "Pod"}}.dump(),
       "expected an admission.k8s.io/v1 AdmissionReview, got apiVersion \"v1\" kind \"Pod\""},
      {v1beta1.dump(),
       "expected an admission.k8s.io/v1 AdmissionReview, got apiVersion "
       "\"admission.k8s.io/v1beta1\""},
      {json{{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}}.dump(),
       "the AdmissionReview has no request"},
      {noUid.dump(), "the AdmissionReview's request has no uid"},
      {std::string(100000, '['), "the request body is not JSON"},
  };
  for (const auto& [body, message] : cases) {
    const auto reply = AdmissionReviewHandler::handle(body, chartParams());
    EXPECT_EQ(reply.httpStatus, 400) << body.substr(0, 80);
    EXPECT_EQ(reply.body.rfind(message, 0), 0u) << reply.body;
    EXPECT_EQ(reply.decision, "bad review");
  }
}

TEST(AdmissionReviewHandler, RefusesAPodItCannotPatchNamingTheField) {
  const std::vector<std::pair<json, std::string>> cases = {
      {json(nullptr), "request.object is not an object"},
      {json{{"metadata", json::object()}}, "request.object.spec is not an object"},
      {json{{"spec", {{"containers", json::array()}}}},
       "request.object.spec.containers is not a list of containers"},
      {json{{"spec", {{"containers", json::array({json::object()})}, {"volumes", "x"}}}},
       "request.object.spec.volumes is not a list"},
      {json{{"spec", {{"containers", json::array({{{"volumeMounts", 1}}})}}}},
       "request.object.spec.containers[0].volumeMounts is not a list"},
      {json{{"metadata", {{"labels", {{"leasehold.io/inject", true}}}}},
            {"spec", {{"containers", json::array({json::object()})}}}},
       "request.object.metadata.labels[leasehold.io/inject] is not a string"},
  };
  for (const auto& [pod, message] : cases) {
    const json response = reviewed(pod);
    EXPECT_FALSE(response.at("allowed").get<bool>()) << pod.dump();
    EXPECT_EQ(response.at("status").at("code"), 400);
    EXPECT_EQ(response.at("status").at("message"), message);
  }
}

TEST(AdmissionReviewHandler, LogFieldsNameThePodButCarryNoneOfItsValues) {
  for (const json& pod : {userPod(), userPod(json::object())}) {
    const auto reply = AdmissionReviewHandler::handle(review(pod).dump(), chartParams());
    std::string fields;
    for (const auto& [key, value] : reply.fields)
      fields += key + "=" + value + " ";
    EXPECT_NE(fields.find("pod=shop"), std::string::npos) << fields;
    EXPECT_NE(fields.find("namespace=shop"), std::string::npos) << fields;
    EXPECT_EQ(fields.find("hunter2"), std::string::npos) << fields;
  }
}

}  // namespace
}  // namespace leasehold::inject
