#include "cluster/Kubeconfig.h"

#include <nlohmann/json.hpp>
#include <set>

#include "cluster/ExecTokenSource.h"
#include "cluster/FileTokenSource.h"
#include "cluster/RestConfigFileReader.h"
#include "cluster/StaticTokenSource.h"
#include "net/Base64.h"

namespace leasehold::cluster {

namespace {

std::filesystem::path relativeTo(const std::filesystem::path& kubeconfigFile,
                                 const std::string& path) {
  std::filesystem::path p(path);
  if (p.is_absolute()) return p;
  return kubeconfigFile.parent_path() / p;
}

// The PEM from a `*-data` field (base64, wins) or a path field; empty when neither is set.
LoadResult<std::string> readPem(const std::optional<KubeconfigValue<std::string>>& data,
                                const std::optional<KubeconfigValue<std::string>>& path) {
  std::string pem;
  const KubeconfigLocation* where = nullptr;
  if (data && !data->value.empty()) {
    auto decoded = net::Base64::decode(data->value);
    if (!decoded) return data->location.error("not valid base64");
    pem = std::move(*decoded);
    where = &data->location;
  } else if (path && !path->value.empty()) {
    const auto file = relativeTo(path->location.file, path->value);
    auto content = RestConfigFileReader::read(file);
    if (!content) return path->location.error(content.message());
    pem = std::move(content).value();
    where = &path->location;
  } else {
    return std::string();
  }
  if (pem.find("-----BEGIN ") == std::string::npos) {
    return where->error("does not contain a PEM block");
  }
  return pem;
}

bool hasValue(const std::optional<KubeconfigValue<std::string>>& field) {
  return field && !field->value.empty();
}

// kubectl accepts a bare host:port and assumes https.
LoadResult<std::string> normalizeServer(const KubeconfigValue<std::string>& server) {
  std::string url = server.value;
  const auto scheme = url.find("://");
  if (scheme == std::string::npos) {
    url = "https://" + url;
  } else {
    const std::string name = url.substr(0, scheme);
    if (name != "https" && name != "http") {
      return server.location.error("\"" + server.value + "\": scheme must be https or http");
    }
  }
  const auto hostStart = url.find("://") + 3;
  if (hostStart >= url.size() || url[hostStart] == '/') {
    return server.location.error("\"" + server.value + "\": no host");
  }
  while (url.size() > hostStart && url.back() == '/')
    url.pop_back();
  return url;
}

LoadResult<std::shared_ptr<TokenSource>> execTokenSource(const KubeconfigExec& exec,
                                                         const std::string& user,
                                                         const RestConfig& cluster,
                                                         const Kubeconfig::Environment& env,
                                                         const RestConfigClocks& clocks) {
  ExecPluginConfig plugin;
  plugin.command = exec.command.value;
  plugin.args = exec.args;
  plugin.env = exec.env;
  plugin.baseDirectory = exec.location.file.parent_path();
  plugin.installHint = exec.installHint;
  plugin.origin = exec.location.describe();
  plugin.user = user;
  if (!exec.apiVersion || exec.apiVersion->value.empty()) {
    return exec.location.error("apiVersion: missing (use " +
                               std::string(ExecCredential::kApiVersionV1) + ")");
  }
  const auto& apiVersion = exec.apiVersion->value;
  if (apiVersion != ExecCredential::kApiVersionV1 &&
      apiVersion != ExecCredential::kApiVersionV1Beta1) {
    return exec.apiVersion->location.error("\"" + apiVersion + "\" is not supported; use " +
                                           std::string(ExecCredential::kApiVersionV1) + " or " +
                                           std::string(ExecCredential::kApiVersionV1Beta1));
  }
  plugin.apiVersion = apiVersion;
  if (exec.interactiveMode) {
    const auto& mode = exec.interactiveMode->value;
    if (mode == "Always") {
      return exec.interactiveMode->location.error(
          "\"Always\" needs a terminal, but leasehold runs the plugin without one");
    }
    if (mode != "Never" && mode != "IfAvailable") {
      return exec.interactiveMode->location.error("\"" + mode +
                                                  "\": expected Never, IfAvailable or Always");
    }
  }
  if (exec.provideClusterInfo) {
    nlohmann::json info = {{"server", cluster.server}};
    if (!cluster.tlsServerName.empty()) info["tls-server-name"] = cluster.tlsServerName;
    if (cluster.insecureSkipTlsVerify) info["insecure-skip-tls-verify"] = true;
    if (!cluster.caPem.empty()) {
      info["certificate-authority-data"] = net::Base64::encode(cluster.caPem);
    }
    plugin.clusterInfoJson = info.dump();
  }
  return std::shared_ptr<TokenSource>(
      std::make_shared<ExecTokenSource>(ExecCredentialPlugin(std::move(plugin), env), clocks.wall));
}

}  // namespace

std::vector<std::filesystem::path> Kubeconfig::candidatePaths(const KubeconfigOptions& options,
                                                              const Environment& env) {
  if (options.explicitPath) return {*options.explicitPath};
  std::vector<std::filesystem::path> paths;
  const auto list = env.find("KUBECONFIG");
  if (list != env.end() && !list->second.empty()) {
    std::set<std::string> seen;
    std::size_t start = 0;
    for (;;) {
      const auto end = list->second.find(':', start);
      const std::string entry =
          list->second.substr(start, end == std::string::npos ? end : end - start);
      if (!entry.empty() && seen.insert(entry).second) paths.emplace_back(entry);
      if (end == std::string::npos) break;
      start = end + 1;
    }
    return paths;
  }
  const auto home = env.find("HOME");
  if (home != env.end() && !home->second.empty()) {
    paths.push_back(std::filesystem::path(home->second) / ".kube" / "config");
  }
  return paths;
}

LoadResult<Kubeconfig> Kubeconfig::load(const KubeconfigOptions& options, const Environment& env) {
  const auto paths = candidatePaths(options, env);
  if (paths.empty()) {
    return LoadError{"no kubeconfig: --kubeconfig, KUBECONFIG and HOME are all unset"};
  }
  std::vector<KubeconfigFile> files;
  for (const auto& path : paths) {
    std::error_code ignored;
    if (!options.explicitPath && !std::filesystem::exists(path, ignored)) continue;
    auto file = KubeconfigFile::read(path);
    if (!file) return file.error();
    files.push_back(std::move(file).value());
  }
  if (files.empty()) {
    std::string tried;
    for (const auto& path : paths)
      tried += (tried.empty() ? "" : ", ") + path.string();
    return LoadError{"no kubeconfig found (looked for " + tried + ")"};
  }
  return merge(std::move(files));
}

Kubeconfig Kubeconfig::merge(std::vector<KubeconfigFile> files) {
  Kubeconfig merged;
  for (auto& file : files) {
    merged.files_.push_back(file.path);
    if (!merged.currentContext_ && file.currentContext)
      merged.currentContext_ = file.currentContext;
    for (auto& cluster : file.clusters)
      merged.clusters_.try_emplace(cluster.name, std::move(cluster));
    for (auto& user : file.users)
      merged.users_.try_emplace(user.name, std::move(user));
    for (auto& context : file.contexts) {
      merged.contexts_.try_emplace(context.name, std::move(context));
    }
  }
  return merged;
}

std::string Kubeconfig::describeFiles() const {
  std::string text = "kubeconfig ";
  for (std::size_t i = 0; i < files_.size(); ++i) {
    text += (i ? ", " : "") + files_[i].string();
  }
  return text;
}

LoadResult<RestConfig> Kubeconfig::restConfig(const std::optional<std::string>& contextOverride,
                                              const Environment& env,
                                              const RestConfigClocks& clocks) const {
  // 1. The context.
  const KubeconfigContext* context = nullptr;
  if (contextOverride && !contextOverride->empty()) {
    const auto it = contexts_.find(*contextOverride);
    if (it == contexts_.end()) {
      return LoadError{describeFiles() + ": context \"" + *contextOverride +
                       "\" (from --context) not found"};
    }
    context = &it->second;
  } else if (currentContext_) {
    const auto it = contexts_.find(currentContext_->value);
    if (it == contexts_.end()) {
      return currentContext_->location.error("context \"" + currentContext_->value +
                                             "\" not found");
    }
    context = &it->second;
  } else {
    return LoadError{describeFiles() + ": no current-context is set; pass --context"};
  }

  // 2. Its cluster and user.
  if (!hasValue(context->cluster)) {
    KubeconfigLocation where = context->location;
    where.keyPath += ".cluster";
    return where.error("missing");
  }
  const auto clusterIt = clusters_.find(context->cluster->value);
  if (clusterIt == clusters_.end()) {
    return context->cluster->location.error("cluster \"" + context->cluster->value +
                                            "\" not found");
  }
  const KubeconfigCluster& cluster = clusterIt->second;
  const KubeconfigUser* user = nullptr;
  if (hasValue(context->user)) {
    const auto userIt = users_.find(context->user->value);
    if (userIt == users_.end()) {
      return context->user->location.error("user \"" + context->user->value + "\" not found");
    }
    user = &userIt->second;
  }

  RestConfig config;
  config.source =
      "kubeconfig " + cluster.location.file.string() + ", context \"" +
      (contextOverride && !contextOverride->empty() ? *contextOverride : currentContext_->value) +
      "\"";
  if (hasValue(context->namespaceName)) config.defaultNamespace = context->namespaceName->value;

  // 3. The cluster's address and TLS settings.
  if (!hasValue(cluster.server)) {
    KubeconfigLocation where = cluster.location;
    where.keyPath += ".server";
    return where.error("missing");
  }
  auto server = normalizeServer(*cluster.server);
  if (!server) return server.error();
  config.server = std::move(server).value();
  if (hasValue(cluster.proxyUrl)) {
    return cluster.proxyUrl->location.error(
        "proxies are not supported by leasehold; remove proxy-url or reach the API server "
        "directly");
  }
  auto ca = readPem(cluster.certificateAuthorityData, cluster.certificateAuthority);
  if (!ca) return ca.error();
  config.caPem = std::move(ca).value();
  if (cluster.insecureSkipTlsVerify && cluster.insecureSkipTlsVerify->value) {
    if (hasValue(cluster.certificateAuthorityData) || hasValue(cluster.certificateAuthority)) {
      return cluster.insecureSkipTlsVerify->location.error(
          "cannot be combined with certificate-authority or certificate-authority-data: either "
          "verify the server against a CA or do not verify it");
    }
    config.insecureSkipTlsVerify = true;
  }
  if (hasValue(cluster.tlsServerName)) config.tlsServerName = cluster.tlsServerName->value;

  if (!user) return config;

  // 4. The user's credentials.
  if (user->unsupportedAuth) {
    return user->unsupportedAuth->error(
        "not supported by leasehold; use a token, tokenFile, a client certificate or an exec "
        "plugin");
  }
  auto certificate = readPem(user->clientCertificateData, user->clientCertificate);
  if (!certificate) return certificate.error();
  auto key = readPem(user->clientKeyData, user->clientKey);
  if (!key) return key.error();
  if (certificate->empty() != key->empty()) {
    KubeconfigLocation where = user->location;
    where.keyPath += certificate->empty() ? ".client-certificate" : ".client-key";
    return where.error(certificate->empty() ? "missing: client-key is set without a certificate"
                                            : "missing: client-certificate is set without a key");
  }
  config.clientCertificatePem = std::move(certificate).value();
  config.clientKeyPem = std::move(key).value();

  if (user->exec) {
    if (hasValue(user->token) || hasValue(user->tokenFile)) {
      return user->exec->location.error("cannot be combined with token or tokenFile");
    }
    auto source = execTokenSource(*user->exec, user->name, config, env, clocks);
    if (!source) return source.error();
    config.tokenSource = std::move(source).value();
  } else if (hasValue(user->tokenFile)) {
    // client-go reads tokenFile even when token is set too, so the file wins.
    auto source = FileTokenSource::open(
        relativeTo(user->tokenFile->location.file, user->tokenFile->value), clocks.monotonic);
    if (!source) return user->tokenFile->location.error(source.message());
    config.tokenSource = std::move(source).value();
  } else if (hasValue(user->token)) {
    config.tokenSource = std::make_shared<StaticTokenSource>(
        user->token->value, "token from " + user->token->location.describe());
  }
  return config;
}

}  // namespace leasehold::cluster
