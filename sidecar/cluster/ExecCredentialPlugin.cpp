#include "cluster/ExecCredentialPlugin.h"

#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

namespace leasehold::cluster {

namespace {

bool isExecutableFile(const std::filesystem::path& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

ExecCredentialPlugin::ExecCredentialPlugin(ExecPluginConfig config, Environment environment,
                                           std::chrono::milliseconds timeout)
    : config_(std::move(config)), environment_(std::move(environment)), timeout_(timeout) {}

std::string ExecCredentialPlugin::describe() const {
  std::string text = "exec plugin \"" + config_.command + "\"";
  if (!config_.user.empty()) text += " of user \"" + config_.user + "\"";
  if (!config_.origin.empty()) text += " (" + config_.origin + ")";
  return text;
}

LoadResult<std::string> ExecCredentialPlugin::resolveCommand() const {
  const std::string hint = config_.installHint ? "\n" + *config_.installHint : "";
  if (config_.command.find('/') != std::string::npos) {
    std::filesystem::path path = config_.command;
    if (path.is_relative()) path = config_.baseDirectory / path;
    if (!isExecutableFile(path)) {
      return LoadError{describe() + ": " + path.string() + " is not an executable file" + hint};
    }
    return path.string();
  }
  const auto found = environment_.find("PATH");
  const std::string searchPath = found != environment_.end() ? found->second : "/usr/bin:/bin";
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = searchPath.find(':', start);
    std::string dir = searchPath.substr(start, end == std::string::npos ? end : end - start);
    if (dir.empty()) dir = ".";
    const auto candidate = std::filesystem::path(dir) / config_.command;
    if (isExecutableFile(candidate)) return candidate.string();
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return LoadError{describe() + ": command not found in PATH" + hint};
}

std::string ExecCredentialPlugin::execInfoJson() const {
  nlohmann::json spec = {{"interactive", false}};
  if (config_.clusterInfoJson) {
    spec["cluster"] = nlohmann::json::parse(*config_.clusterInfoJson, nullptr, false);
  }
  const nlohmann::json info = {
      {"apiVersion", config_.apiVersion}, {"kind", "ExecCredential"}, {"spec", spec}};
  return info.dump();
}

LoadResult<ProcessSpec> ExecCredentialPlugin::processSpec() const {
  auto command = resolveCommand();
  if (!command) return command.error();

  ProcessSpec spec;
  spec.path = *command;
  spec.argv.push_back(*command);
  spec.argv.insert(spec.argv.end(), config_.args.begin(), config_.args.end());
  Environment env = environment_;
  for (const auto& [name, value] : config_.env)
    env[name] = value;
  env["KUBERNETES_EXEC_INFO"] = execInfoJson();
  spec.environment.reserve(env.size());
  for (const auto& [name, value] : env)
    spec.environment.push_back(name + "=" + value);
  spec.maxOutputBytes = kMaxOutputBytes;
  return spec;
}

LoadResult<ExecCredential> ExecCredentialPlugin::interpret(const ProcessExit& exit,
                                                           bool timedOut) const {
  // The deadline first: the SIGKILL it caused says nothing about the plugin.
  if (timedOut) {
    return LoadError{describe() + ": did not finish within " + std::to_string(timeout_.count()) +
                     " ms"};
  }
  if (exit.startFailure) return LoadError{describe() + ": " + *exit.startFailure};
  if (exit.outputTooLarge) {
    return LoadError{describe() + ": printed more than " + std::to_string(kMaxOutputBytes) +
                     " bytes"};
  }
  if (exit.readFailure) return LoadError{describe() + ": " + *exit.readFailure};
  if (exit.signal) {
    return LoadError{describe() + ": killed by signal " + std::to_string(*exit.signal)};
  }
  if (!exit.exitCode) {
    return LoadError{describe() +
                     ": exit status unknown (the process was reaped elsewhere; is "
                     "SIGCHLD ignored?)"};
  }
  if (*exit.exitCode != 0) {
    return LoadError{describe() + ": exited with status " + std::to_string(*exit.exitCode)};
  }
  return ExecCredential::parse(exit.output, config_.apiVersion, describe());
}

}  // namespace leasehold::cluster
