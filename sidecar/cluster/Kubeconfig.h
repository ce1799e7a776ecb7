#pragma once
// The merged view of one or more kubeconfig files, and the resolution of one context into a
// RestConfig.
//
// Merge rules (kubectl's): files are taken in order; for clusters, users and contexts the first
// file that defines a name wins with its whole entry; the first file that sets current-context
// wins. Relative paths in an entry (certificate-authority, client-certificate, client-key,
// tokenFile, an exec command with a '/') are relative to the folder of the file that entry came
// from.
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cluster/KubeconfigFile.h"
#include "cluster/RestConfig.h"
#include "cluster/RestConfigClocks.h"
#include "cluster/RestConfigResult.h"

namespace leasehold::cluster {

struct KubeconfigOptions {
  // --kubeconfig: one file that must exist. Unset: $KUBECONFIG, else $HOME/.kube/config.
  std::optional<std::filesystem::path> explicitPath;
  // --context: overrides current-context.
  std::optional<std::string> context;
};

class Kubeconfig {
 public:
  using Environment = std::map<std::string, std::string, std::less<>>;

  // The files to read, in order. Empty entries of $KUBECONFIG and repeats are dropped.
  static std::vector<std::filesystem::path> candidatePaths(const KubeconfigOptions& options,
                                                           const Environment& env);

  // Reads the candidate files. Missing files from $KUBECONFIG are skipped as kubectl does; a
  // missing --kubeconfig is an error, and so is finding no file at all.
  static LoadResult<Kubeconfig> load(const KubeconfigOptions& options, const Environment& env);

  static Kubeconfig merge(std::vector<KubeconfigFile> files);

  // Resolves `context` (or current-context when none) to a RestConfig. `env` is the base
  // environment of exec plugins.
  LoadResult<RestConfig> restConfig(const std::optional<std::string>& context,
                                    const Environment& env,
                                    const RestConfigClocks& clocks = {}) const;

  const std::optional<KubeconfigValue<std::string>>& currentContext() const {
    return currentContext_;
  }
  const std::vector<std::filesystem::path>& files() const { return files_; }

 private:
  // "kubeconfig /a, /b" for messages that concern no single entry.
  std::string describeFiles() const;

  std::vector<std::filesystem::path> files_;
  std::optional<KubeconfigValue<std::string>> currentContext_;
  std::map<std::string, KubeconfigCluster> clusters_;
  std::map<std::string, KubeconfigUser> users_;
  std::map<std::string, KubeconfigContext> contexts_;
};

}  // namespace leasehold::cluster
