#pragma once
// A client-go credential plugin (users[].user.exec in a kubeconfig): what to run and what its
// answer means. Running it is someone else's job: ExecTokenSource starts the process through a
// ProcessLauncher on the event loop and kills it at the deadline, so nothing here blocks.
//
// processSpec() resolves the command (PATH, or relative to the kubeconfig's folder, as client-go
// does) and builds the arguments and the environment (ours, the kubeconfig's env on top, and
// KUBERNETES_EXEC_INFO). interpret() turns how the process ended into a credential or a message
// that names the command and where it was configured, never its output or an env value.
// Output is capped so a broken plugin cannot exhaust memory. The plugin's stderr passes through
// to ours (plugins print hints there); stdin is /dev/null, since there is nobody to answer a
// prompt.
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cluster/ExecCredential.h"
#include "cluster/ProcessLauncher.h"
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
  // The kubeconfig user it authenticates, for messages; empty when unknown.
  std::string user;
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

  // The process to start, or why there is none (command not found, not executable).
  LoadResult<ProcessSpec> processSpec() const;
  // The credential in what the process printed, or why there is none. `timedOut`: the caller
  // killed it at the deadline (timeout()).
  LoadResult<ExecCredential> interpret(const ProcessExit& exit, bool timedOut) const;

  const ExecPluginConfig& config() const { return config_; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  // `exec plugin "aws" of user "dev" (kubeconfig /x/config:12: users[0].user.exec)`: command,
  // user and origin, never an env value.
  std::string describe() const;

 private:
  LoadResult<std::string> resolveCommand() const;
  std::string execInfoJson() const;

  ExecPluginConfig config_;
  Environment environment_;
  std::chrono::milliseconds timeout_;
};

}  // namespace leasehold::cluster
