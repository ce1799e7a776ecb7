#include "cluster/RestConfigLoader.h"

#include "cluster/FileTokenSource.h"
#include "cluster/RestConfigFileReader.h"

namespace leasehold::cluster {

namespace {

constexpr const char* kHostVariable = "KUBERNETES_SERVICE_HOST";
constexpr const char* kPortVariable = "KUBERNETES_SERVICE_PORT";

std::string variable(const RestConfigLoader::Environment& env, const char* name) {
  const auto it = env.find(name);
  return it == env.end() ? std::string() : it->second;
}

std::string trimmed(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}

bool isPort(const std::string& text) {
  if (text.empty() || text.size() > 5) return false;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
  }
  const int port = std::stoi(text);
  return port > 0 && port <= 65535;
}

}  // namespace

bool RestConfigLoader::inClusterEnvironment(const Environment& env) {
  return !variable(env, kHostVariable).empty() || !variable(env, kPortVariable).empty();
}

LoadResult<RestConfig> RestConfigLoader::loadInCluster(
    const Environment& env, const std::filesystem::path& serviceAccountDirectory,
    const RestConfigClocks& clocks) {
  const std::string host = variable(env, kHostVariable);
  const std::string port = variable(env, kPortVariable);
  if (host.empty() || port.empty()) {
    return LoadError{std::string("in-cluster: ") + (host.empty() ? kHostVariable : kPortVariable) +
                     " is not set; both " + kHostVariable + " and " + kPortVariable +
                     " are needed (is this running in a pod?)"};
  }
  if (!isPort(port)) {
    return LoadError{std::string("in-cluster: ") + kPortVariable + "=\"" + port +
                     "\" is not a port number"};
  }
  RestConfig config;
  const bool ipv6 = host.find(':') != std::string::npos && host.front() != '[';
  config.server = "https://" + (ipv6 ? "[" + host + "]" : host) + ":" + port;
  config.source = "in-cluster service account (" + serviceAccountDirectory.string() + ")";

  auto token = FileTokenSource::open(serviceAccountDirectory / "token", clocks.monotonic);
  if (!token) return LoadError{"in-cluster: " + token.message()};
  config.tokenSource = std::move(token).value();

  auto ca = RestConfigFileReader::read(serviceAccountDirectory / "ca.crt");
  if (!ca) return LoadError{"in-cluster: " + ca.message()};
  if (ca->find("-----BEGIN ") == std::string::npos) {
    return LoadError{"in-cluster: " + (serviceAccountDirectory / "ca.crt").string() +
                     ": does not contain a PEM certificate"};
  }
  config.caPem = std::move(ca).value();

  // Optional: the namespace can also come from POD_NAMESPACE or the flag.
  auto ns = RestConfigFileReader::read(serviceAccountDirectory / "namespace");
  if (ns && !trimmed(*ns).empty()) config.defaultNamespace = trimmed(*ns);
  return config;
}

LoadResult<RestConfig> RestConfigLoader::loadKubeconfig(const KubeconfigOptions& options,
                                                        const Environment& env,
                                                        const RestConfigClocks& clocks) {
  auto kubeconfig = Kubeconfig::load(options, env);
  if (!kubeconfig) return kubeconfig.error();
  return kubeconfig->restConfig(options.context, env, clocks);
}

LoadResult<RestConfig> RestConfigLoader::load(const KubeconfigOptions& options,
                                              const Environment& env,
                                              const std::filesystem::path& serviceAccountDirectory,
                                              const RestConfigClocks& clocks) {
  const bool kubeconfigAsked =
      options.explicitPath.has_value() || !variable(env, "KUBECONFIG").empty();
  if (!kubeconfigAsked && inClusterEnvironment(env)) {
    return loadInCluster(env, serviceAccountDirectory, clocks);
  }
  return loadKubeconfig(options, env, clocks);
}

}  // namespace leasehold::cluster
