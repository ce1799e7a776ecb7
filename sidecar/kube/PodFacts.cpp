#include "kube/PodFacts.h"

#include <nlohmann/json.hpp>

#include "kube/JsonFields.h"
#include "kube/LeaseCodec.h"

namespace leasehold::kube {
namespace {

using json_fields::member;
using json_fields::readBool;
using json_fields::readObject;
using json_fields::readString;
using nlohmann::json;

bool readExit(const json& state, const std::string& path, std::optional<ContainerExit>& out,
              std::string& error) {
  const json* t = nullptr;
  if (!readObject(state, "terminated", path, t, error)) return false;
  if (!t) return true;
  const std::string at = path + "terminated.";
  ContainerExit e;
  std::string finished;
  if (!readString(*t, "finishedAt", at, finished, error) ||
      !readString(*t, "reason", at, e.reason, error)) {
    return false;
  }
  if (!finished.empty()) {
    e.finishedAt = parseMicroTime(finished);
    if (!e.finishedAt) {
      error = at + "finishedAt: not a valid time: " + finished;
      return false;
    }
  }
  if (const json* code = member(*t, "exitCode")) {
    if (!code->is_number_integer()) {
      error = at + "exitCode: expected an integer";
      return false;
    }
    e.exitCode = static_cast<int>(code->get<std::int64_t>());
  }
  out = std::move(e);
  return true;
}

// Each item of the list parent.key (absent: none): an object with a name, handed to
// fn(item, name, its path + ".") with paths such as "status.containerStatuses[2].".
template <class F>
bool forEachNamed(const json& parent, const char* key, const std::string& parentPath,
                  std::string& error, F&& fn) {
  const json* list = member(parent, key);
  if (!list) return true;
  const std::string path = parentPath + key;
  if (!list->is_array()) {
    error = path + ": expected an array";
    return false;
  }
  for (std::size_t i = 0; i < list->size(); i++) {
    const json& c = (*list)[i];
    const std::string item = path + "[" + std::to_string(i) + "]";
    if (!c.is_object()) {
      error = item + ": expected an object";
      return false;
    }
    std::string name;
    if (!readString(c, "name", item + ".", name, error)) return false;
    if (name.empty()) {
      error = item + ".name: missing";
      return false;
    }
    if (!fn(c, name, item + ".")) return false;
  }
  return true;
}

bool readStatuses(const json& status, const char* key, PodFacts& pod, std::string& error) {
  const auto one = [&](const json& c, const std::string& name, const std::string& at) {
    ContainerFacts facts;
    const json* state = nullptr;
    const json* last = nullptr;
    if (!readObject(c, "state", at, state, error) || !readObject(c, "lastState", at, last, error))
      return false;
    if (state) {
      const json* running = nullptr;
      if (!readObject(*state, "running", at + "state.", running, error)) return false;
      facts.running = running != nullptr;
      if (!readExit(*state, at + "state.", facts.terminated, error)) return false;
    }
    if (last && !readExit(*last, at + "lastState.", facts.lastTerminated, error)) return false;
    facts.namesItself = pod.containers[name].namesItself;  // read from the spec before
    pod.containers[name] = std::move(facts);
    return true;
  };
  return forEachNamed(status, key, "status.", error, one);
}

// spec.containers or spec.initContainers: which set LEASEHOLD_CONTAINER to their own name.
bool readSpecs(const json& spec, const char* key, PodFacts& pod, std::string& error) {
  const auto one = [&](const json& c, const std::string& name, const std::string& at) {
    const json* env = member(c, "env");
    if (env && !env->is_array()) {
      error = at + "env: expected an array";
      return false;
    }
    bool namesItself = false;
    for (std::size_t j = 0; env && j < env->size(); j++) {
      std::string variable, value;
      const std::string e = at + "env[" + std::to_string(j) + "].";
      if (!readString((*env)[j], "name", e, variable, error) ||
          !readString((*env)[j], "value", e, value, error)) {
        return false;
      }
      namesItself = namesItself || (variable == "LEASEHOLD_CONTAINER" && value == name);
    }
    pod.containers[name].namesItself = namesItself;
    return true;
  };
  return forEachNamed(spec, key, "spec.", error, one);
}

bool decodePodObject(const json& obj, PodFacts& out, std::string& error) {
  if (!obj.is_object()) {
    error = "pod: expected an object";
    return false;
  }
  PodFacts pod;
  const json* meta = nullptr;
  const json* spec = nullptr;
  const json* status = nullptr;
  if (!readObject(obj, "metadata", "", meta, error) || !readObject(obj, "spec", "", spec, error) ||
      !readObject(obj, "status", "", status, error)) {
    return false;
  }
  if (meta) {
    if (!readString(*meta, "name", "metadata.", pod.name, error) ||
        !readString(*meta, "uid", "metadata.", pod.uid, error)) {
      return false;
    }
    pod.deleting = member(*meta, "deletionTimestamp") != nullptr;
  }
  if (spec &&
      (!readBool(*spec, "shareProcessNamespace", "spec.", pod.shareProcessNamespace, error) ||
       !readBool(*spec, "hostPID", "spec.", pod.hostPid, error) ||
       !readSpecs(*spec, "initContainers", pod, error) ||
       !readSpecs(*spec, "containers", pod, error))) {
    return false;
  }
  if (status && (!readString(*status, "phase", "status.", pod.phase, error) ||
                 !readStatuses(*status, "initContainerStatuses", pod, error) ||
                 !readStatuses(*status, "containerStatuses", pod, error))) {
    return false;
  }
  out = std::move(pod);
  return true;
}

}  // namespace

bool decodePodFacts(std::string_view text, PodFacts& out, std::string& error) {
  const json obj = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (obj.is_discarded()) {
    error = "pod: not valid JSON";
    return false;
  }
  return decodePodObject(obj, out, error);
}

bool decodePodListFacts(std::string_view text, std::optional<PodFacts>& out,
                        std::string& resourceVersion, std::string& error) {
  const json obj = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (obj.is_discarded() || !obj.is_object()) {
    error = "pod list: not a JSON object";
    return false;
  }
  const json* meta = nullptr;
  if (!readObject(obj, "metadata", "", meta, error)) return false;
  std::string rv;
  if (meta && !readString(*meta, "resourceVersion", "metadata.", rv, error)) return false;
  const json* items = member(obj, "items");
  if (items && !items->is_array()) {
    error = "items: expected an array";
    return false;
  }
  std::optional<PodFacts> first;
  if (items && !items->empty()) {
    PodFacts pod;
    if (!decodePodObject((*items)[0], pod, error)) {
      error = "items[0]." + error;
      return false;
    }
    first = std::move(pod);
  }
  out = std::move(first);
  resourceVersion = std::move(rv);
  return true;
}

}  // namespace leasehold::kube
