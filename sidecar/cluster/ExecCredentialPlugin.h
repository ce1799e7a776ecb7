#pragma once
// Runs a client-go credential plugin (users[].user.exec in a kubeconfig) and parses what it
// prints.
//
// Running it blocks the calling thread until the plugin exits: at most `timeout` (10 s by
// default). That happens only at start-up, when a credential expires, and after a 401, so the
// event loop pauses rarely; a renewal in flight at that moment is simply late, which the renew
// deadline absorbs. Output is capped so a broken plugin cannot exhaust memory. The plugin's stderr
// passes through to ours (plugins print hints there); stdin is /dev/null, since there is nobody
// to answer a prompt.
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cluster/ExecCredential.h"
#include "cluster/RestConfigResult.h"

namespace leasehold::cluster {

struct ExecPluginConfig {
  std::string command;
  std::vector<std::string> args;
  // Added to the environment; values may be secrets and never appear in messages.
  std::vector<std::pair<std::string, std::string>> env;
  std::string apiVersion{ExecCredential::kApiVersionV1};
  // A command with a '/' that is not absolute is relative to the kubeconfig's folder (client-go).
  std::filesystem::path baseDirectory;
  std::optional<std::string> installHint;
  // With provideClusterInfo: the spec.cluster object to pass in KUBERNETES_EXEC_INFO, as JSON.
  std::optional<std::string> clusterInfoJson;
  // Where it was configured, for messages: "kubeconfig /x/config:12: users[0].user.exec".
  std::string origin;
};

class ExecCredentialPlugin {
 public:
  using Environment = std::map<std::string, std::string, std::less<>>;

  static constexpr std::chrono::milliseconds kDefaultTimeout = std::chrono::seconds(10);
  static constexpr std::size_t kMaxOutputBytes = 1024 * 1024;

  // `environment` is the base environment for the child (normally the sidecar's own); PATH in it
  // is used to find a bare command name.
  ExecCredentialPlugin(ExecPluginConfig config, Environment environment,
                       std::chrono::milliseconds timeout = kDefaultTimeout);

  LoadResult<ExecCredential> run() const;

  const ExecPluginConfig& config() const { return config_; }
  // `exec plugin "aws" (kubeconfig /x/config:12: users[0].user.exec)`: command, never env.
  std::string describe() const;

 private:
  LoadResult<std::string> resolveCommand() const;
  std::string execInfoJson() const;

  ExecPluginConfig config_;
  Environment environment_;
  std::chrono::milliseconds timeout_;
};

}  // namespace leasehold::cluster
