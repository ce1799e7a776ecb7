#include "inject/SidecarPatch.h"

#include <string>

namespace leasehold::inject {

namespace {

using nlohmann::json;

constexpr const char* kStatusVolume = "leasehold-status";
constexpr const char* kStatusDir = "/var/run/leasehold";

json fieldEnv(const char* name, const char* fieldPath) {
  return {{"name", name}, {"valueFrom", {{"fieldRef", {{"fieldPath", fieldPath}}}}}};
}

json probe(const char* path) {
  return {{"httpGet", {{"path", path}, {"port", "lh-probes"}}}};
}

// The quantities that are set, as the policy's `requests`/`limits` variables build them.
json quantities(const std::string& cpu, const std::string& memory) {
  json out = json::object();
  if (!cpu.empty()) out["cpu"] = cpu;
  if (!memory.empty()) out["memory"] = memory;
  return out;
}

bool hasItems(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_array() && !it->empty();
}

}  // namespace

json SidecarPatch::sidecar(const Annotations& notes, const InjectorParams& params) {
  json args = json::array({
      "--lease-name=" + notes.at("leasehold.io/lease"),
      "--lease-duration=" + AnnotationRules::leaseDuration(notes, params),
      "--renew-deadline=" + AnnotationRules::renewDeadline(notes, params),
      "--retry-period=" + AnnotationRules::retryPeriod(notes, params),
      "--http-address=127.0.0.1:" + params.httpPort,
      "--probe-address=0.0.0.0:" + params.probePort,
  });
  // --fast-failover refuses a status file: a file outlives the process that wrote it.
  const bool fast = AnnotationRules::fastFailover(notes);
  args.push_back(fast ? std::string("--fast-failover")
                      : std::string("--status-file=") + kStatusDir + "/status.json");
  if (const auto shards = notes.find("leasehold.io/shards"); shards != notes.end()) {
    args.push_back("--shards=" + shards->second);
  }
  args.push_back("--log-format=" + params.logFormat);
  args.push_back("--log-level=" + params.logLevel);

  json env = json::array({fieldEnv("POD_NAME", "metadata.name"),
                          fieldEnv("POD_NAMESPACE", "metadata.namespace"),
                          fieldEnv("POD_IP", "status.podIP")});
  if (fast) {
    env.push_back(fieldEnv("POD_UID", "metadata.uid"));
    env.push_back({{"name", "LEASEHOLD_CONTAINER"}, {"value", "leasehold"}});
  }

  json startup = probe("/healthz");
  startup["periodSeconds"] = 1;
  startup["failureThreshold"] = 30;
  json liveness = probe("/healthz");
  liveness["periodSeconds"] = 10;
  liveness["timeoutSeconds"] = 2;
  liveness["failureThreshold"] = 3;
  json readiness = probe("/readyz");
  readiness["periodSeconds"] = 5;
  readiness["timeoutSeconds"] = 2;

  json sidecar = {
      {"name", "leasehold"},
      {"image", params.image},
      {"imagePullPolicy", params.imagePullPolicy},
      {"restartPolicy", "Always"},
      {"args", std::move(args)},
      {"env", std::move(env)},
      {"ports", json::array({{{"name", "lh-probes"},
                              {"containerPort", params.probePortNumber},
                              {"protocol", "TCP"}}})},
      {"startupProbe", std::move(startup)},
      {"livenessProbe", std::move(liveness)},
      {"readinessProbe", std::move(readiness)},
      {"resources",
       {{"requests", quantities(params.cpuRequest, params.memoryRequest)},
        {"limits", quantities(params.cpuLimit, params.memoryLimit)}}},
      {"securityContext",
       {{"allowPrivilegeEscalation", false},
        {"readOnlyRootFilesystem", true},
        {"runAsNonRoot", true},
        {"runAsUser", 65532},
        {"runAsGroup", 65532},
        {"capabilities", {{"drop", json::array({"ALL"})}}},
        {"seccompProfile", {{"type", "RuntimeDefault"}}}}},
  };
  if (!fast) {
    sidecar["volumeMounts"] = json::array({{{"name", kStatusVolume}, {"mountPath", kStatusDir}}});
  }
  return sidecar;
}

json SidecarPatch::statusVolume() {
  return {{"name", kStatusVolume}, {"emptyDir", {{"medium", "Memory"}, {"sizeLimit", "1Mi"}}}};
}

json SidecarPatch::statusMount() {
  return {{"name", kStatusVolume}, {"mountPath", kStatusDir}, {"readOnly", true}};
}

json SidecarPatch::forPod(const json& pod, const Annotations& notes, const InjectorParams& params) {
  const json& spec = pod.at("spec");
  json patch = json::array();
  if (hasItems(spec, "initContainers")) {
    patch.push_back(
        {{"op", "add"}, {"path", "/spec/initContainers/0"}, {"value", sidecar(notes, params)}});
  } else {
    patch.push_back({{"op", "add"},
                     {"path", "/spec/initContainers"},
                     {"value", json::array({sidecar(notes, params)})}});
  }
  if (AnnotationRules::fastFailover(notes)) return patch;  // no status file to share
  if (hasItems(spec, "volumes")) {
    patch.push_back({{"op", "add"}, {"path", "/spec/volumes/-"}, {"value", statusVolume()}});
  } else {
    patch.push_back(
        {{"op", "add"}, {"path", "/spec/volumes"}, {"value", json::array({statusVolume()})}});
  }
  const json& containers = spec.at("containers");
  for (std::size_t i = 0; i < containers.size(); ++i) {
    const std::string path = "/spec/containers/" + std::to_string(i) + "/volumeMounts";
    if (hasItems(containers[i], "volumeMounts")) {
      patch.push_back({{"op", "add"}, {"path", path + "/-"}, {"value", statusMount()}});
    } else {
      patch.push_back({{"op", "add"}, {"path", path}, {"value", json::array({statusMount()})}});
    }
  }
  return patch;
}

}  // namespace leasehold::inject
