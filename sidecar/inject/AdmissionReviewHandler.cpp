#include "inject/AdmissionReviewHandler.h"

#include <nlohmann/json.hpp>
#include <optional>

#include "inject/AnnotationRules.h"
#include "inject/SidecarPatch.h"
#include "net/Base64.h"

namespace leasehold::inject {

namespace {

using nlohmann::json;

constexpr const char* kReviewVersion = "admission.k8s.io/v1";

AdmissionReply badReview(std::string message) {
  AdmissionReply reply;
  reply.httpStatus = 400;
  reply.contentType = "text/plain; charset=utf-8";
  reply.body = message + "\n";
  reply.decision = "bad review";
  reply.fields = {{"error", std::move(message)}};
  return reply;
}

std::string stringAt(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The review's `response` being built (the request's uid in it), and what to log about it.
struct Response {
  json body;
  std::string decision;
  log::Fields fields;

  AdmissionReply reply() && {
    AdmissionReply r;
    r.contentType = "application/json";
    r.body = json{{"apiVersion", kReviewVersion},
                  {"kind", "AdmissionReview"},
                  {"response", std::move(body)}}
                 .dump();
    r.decision = std::move(decision);
    r.fields = std::move(fields);
    return r;
  }
};

// The pod's string map at metadata.<key>, or why it is not one.
std::variant<Annotations, std::string> stringMap(const json& pod, const char* key) {
  Annotations map;
  const auto metadata = pod.find("metadata");
  if (metadata == pod.end()) return map;
  if (!metadata->is_object()) return std::string("request.object.metadata is not an object");
  const auto it = metadata->find(key);
  if (it == metadata->end() || it->is_null()) return map;
  if (!it->is_object()) return "request.object.metadata." + std::string(key) + " is not a map";
  for (const auto& [name, value] : it->items()) {
    if (!value.is_string()) {
      return "request.object.metadata." + std::string(key) + "[" + name + "] is not a string";
    }
    map.emplace(name, value.get<std::string>());
  }
  return map;
}

// Why `pod` is not shaped as the API server sends a pod, for what the patch touches.
std::optional<std::string> malformedPod(const json& pod) {
  if (!pod.is_object()) return "request.object is not an object";
  const auto spec = pod.find("spec");
  if (spec == pod.end() || !spec->is_object()) return "request.object.spec is not an object";
  const auto containers = spec->find("containers");
  if (containers == spec->end() || !containers->is_array() || containers->empty()) {
    return "request.object.spec.containers is not a list of containers";
  }
  for (const char* list : {"initContainers", "volumes"}) {
    const auto it = spec->find(list);
    if (it != spec->end() && !it->is_null() && !it->is_array()) {
      return "request.object.spec." + std::string(list) + " is not a list";
    }
  }
  for (const char* list : {"initContainers", "containers"}) {
    const auto it = spec->find(list);
    if (it == spec->end() || !it->is_array()) continue;
    for (std::size_t i = 0; i < it->size(); ++i) {
      const json& container = (*it)[i];
      const std::string where =
          "request.object.spec." + std::string(list) + "[" + std::to_string(i) + "]";
      if (!container.is_object()) return where + " is not an object";
      const auto mounts = container.find("volumeMounts");
      if (mounts != container.end() && !mounts->is_null() && !mounts->is_array()) {
        return where + ".volumeMounts is not a list";
      }
    }
  }
  return std::nullopt;
}

bool hasSidecar(const json& spec) {
  for (const char* list : {"initContainers", "containers"}) {
    const auto it = spec.find(list);
    if (it == spec.end() || !it->is_array()) continue;
    for (const auto& container : *it) {
      if (stringAt(container, "name") == "leasehold") return true;
    }
  }
  return false;
}

}  // namespace

AdmissionReply AdmissionReviewHandler::handle(std::string_view body, const ParamsState& params) {
  json review = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (review.is_discarded()) return badReview("the request body is not JSON");
  if (!review.is_object()) return badReview("the request body is not a JSON object");
  const std::string apiVersion = stringAt(review, "apiVersion");
  const std::string kind = stringAt(review, "kind");
  if (apiVersion != kReviewVersion || kind != "AdmissionReview") {
    return badReview("expected an admission.k8s.io/v1 AdmissionReview, got apiVersion \"" +
                     apiVersion + "\" kind \"" + kind + "\"");
  }
  const auto requestIt = review.find("request");
  if (requestIt == review.end() || !requestIt->is_object()) {
    return badReview("the AdmissionReview has no request");
  }
  const json& request = *requestIt;
  const std::string uid = stringAt(request, "uid");
  if (uid.empty()) return badReview("the AdmissionReview's request has no uid");

  const std::string ns = stringAt(request, "namespace");
  Response response{{{"uid", uid}, {"allowed", true}}, "untouched", {{"uid", uid}}};
  if (!ns.empty()) response.fields.emplace_back("namespace", ns);

  const auto resource = request.find("resource");
  const bool pods =
      resource != request.end() && resource->is_object() && stringAt(*resource, "group").empty() &&
      stringAt(*resource, "resource") == "pods" && stringAt(request, "subResource").empty();
  const std::string operation = stringAt(request, "operation");
  if (!pods || operation != "CREATE") {
    response.fields.emplace_back("reason", "not the creation of a pod");
    return std::move(response).reply();
  }
  const auto objectIt = request.find("object");
  const json pod = objectIt == request.end() ? json() : *objectIt;
  auto refuse = [&](int code, std::string message, std::string decision) {
    response.body["allowed"] = false;
    response.body["status"] = {
        {"code", code}, {"reason", code == 403 ? "Forbidden" : "BadRequest"}, {"message", message}};
    response.decision = std::move(decision);
    response.fields.emplace_back("reason", std::move(message));
    return std::move(response).reply();
  };
  if (auto problem = malformedPod(pod)) return refuse(400, std::move(*problem), "bad pod");
  const std::string name = stringAt(pod.value("metadata", json::object()), "name");
  const std::string generateName = stringAt(pod.value("metadata", json::object()), "generateName");
  response.fields.emplace_back("pod", name.empty() ? generateName + "*" : name);

  auto labels = stringMap(pod, "labels");
  if (auto* problem = std::get_if<std::string>(&labels)) {
    return refuse(400, std::move(*problem), "bad pod");
  }
  const auto& labelMap = std::get<Annotations>(labels);
  const auto inject = labelMap.find("leasehold.io/inject");
  if (inject == labelMap.end() || inject->second != "true") {
    response.fields.emplace_back("reason", "no label leasehold.io/inject: \"true\"");
    return std::move(response).reply();
  }
  if (ns == "kube-system") {
    response.fields.emplace_back("reason", "kube-system");
    return std::move(response).reply();
  }
  if (const auto* problem = std::get_if<std::string>(&params)) {
    // The policy's warning is about a pod left without the sidecar: one that has its own is not.
    if (hasSidecar(pod.at("spec"))) {
      response.fields.emplace_back("reason", "has a leasehold container already");
      return std::move(response).reply();
    }
    response.body["warnings"] = json::array(
        {"leasehold.io/inject is \"true\" but no leasehold sidecar was injected: this pod will "
         "never lead. The injector (leasehold inject) has no usable parameters: " +
         *problem + "; check the injector's ConfigMap."});
    response.decision = "not injected";
    response.fields.emplace_back("reason", "no usable parameters: " + *problem);
    return std::move(response).reply();
  }
  const auto& injectorParams = std::get<InjectorParams>(params);
  auto notes = stringMap(pod, "annotations");
  if (auto* problem = std::get_if<std::string>(&notes)) {
    return refuse(400, std::move(*problem), "bad pod");
  }
  const auto& annotations = std::get<Annotations>(notes);
  if (auto refusal = AnnotationRules::refusal(annotations, injectorParams)) {
    return refuse(403, std::move(*refusal), "refused");
  }
  response.fields.emplace_back("lease", annotations.at("leasehold.io/lease"));
  if (hasSidecar(pod.at("spec"))) {
    response.fields.emplace_back("reason", "has a leasehold container already");
    return std::move(response).reply();
  }
  const json patch = SidecarPatch::forPod(pod, annotations, injectorParams);
  response.body["patchType"] = "JSONPatch";
  response.body["patch"] = net::Base64::encode(patch.dump());
  response.decision = "injected";
  return std::move(response).reply();
}

}  // namespace leasehold::inject
