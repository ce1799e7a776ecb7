#pragma once
// One kubeconfig file as written, before merging: its clusters, users and contexts with the
// place (file, line, key path) each value came from, so that problems found later (a context
// naming a missing cluster, bad base64) can still point at the exact line.
//
// Only the fields leasehold understands are read; unknown keys are ignored as kubectl does
// (kubeconfigs carry extensions and preferences). Wrong types are errors.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cluster/RestConfigResult.h"

namespace leasehold::cluster {

struct KubeconfigLocation {
  std::filesystem::path file;
  int line = 0;         // 1-based; 0 when unknown
  std::string keyPath;  // "users[0].user.client-key-data"

  // "kubeconfig /x/config:13: users[0].user.client-key-data"
  std::string describe() const;
  // describe() + ": " + problem
  LoadError error(const std::string& problem) const;
};

template <class T>
struct KubeconfigValue {
  T value;
  KubeconfigLocation location;
};

struct KubeconfigCluster {
  std::string name;
  KubeconfigLocation location;  // of the `cluster` map
  std::optional<KubeconfigValue<std::string>> server;
  std::optional<KubeconfigValue<std::string>> certificateAuthority;      // path
  std::optional<KubeconfigValue<std::string>> certificateAuthorityData;  // base64 PEM
  std::optional<KubeconfigValue<bool>> insecureSkipTlsVerify;
  std::optional<KubeconfigValue<std::string>> tlsServerName;
  std::optional<KubeconfigValue<std::string>> proxyUrl;
};

struct KubeconfigExec {
  KubeconfigLocation location;  // of the `exec` map
  KubeconfigValue<std::string> command;
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  std::optional<KubeconfigValue<std::string>> apiVersion;
  std::optional<KubeconfigValue<std::string>> interactiveMode;
  std::optional<std::string> installHint;
  bool provideClusterInfo = false;
};

struct KubeconfigUser {
  std::string name;
  KubeconfigLocation location;  // of the `user` map
  std::optional<KubeconfigValue<std::string>> token;
  std::optional<KubeconfigValue<std::string>> tokenFile;
  std::optional<KubeconfigValue<std::string>> clientCertificate;      // path
  std::optional<KubeconfigValue<std::string>> clientCertificateData;  // base64 PEM
  std::optional<KubeconfigValue<std::string>> clientKey;              // path
  std::optional<KubeconfigValue<std::string>> clientKeyData;          // base64 PEM
  std::optional<KubeconfigExec> exec;
  // Set when the user relies on something leasehold does not implement (auth-provider,
  // username/password), so resolving it can say so instead of silently sending no credentials.
  std::optional<KubeconfigLocation> unsupportedAuth;
};

struct KubeconfigContext {
  std::string name;
  KubeconfigLocation location;  // of the `context` map
  std::optional<KubeconfigValue<std::string>> cluster;
  std::optional<KubeconfigValue<std::string>> user;
  std::optional<KubeconfigValue<std::string>> namespaceName;
};

struct KubeconfigFile {
  std::filesystem::path path;
  std::optional<KubeconfigValue<std::string>> currentContext;
  std::vector<KubeconfigCluster> clusters;
  std::vector<KubeconfigUser> users;
  std::vector<KubeconfigContext> contexts;

  // `path` names the file in messages and anchors relative paths.
  static LoadResult<KubeconfigFile> parse(std::string_view yaml, const std::filesystem::path& path);
  static LoadResult<KubeconfigFile> read(const std::filesystem::path& path);
};

}  // namespace leasehold::cluster
