#include "config/ConfigLoader.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <climits>
#include <cstdio>
#include <optional>
#include <random>
#include <set>

#include "config/ConfigFile.h"
#include "config/DurationParser.h"
#include "config/KubernetesNameRules.h"
#include "config/ListenAddress.h"
#include "config/Utf8.h"

extern char** environ;

namespace leasehold::config {

namespace {

enum class ValueKind { Text, Duration, Boolean, Address, Choice };

// Stores one value into the Config; returns what is wrong with it (without saying where it came
// from: the caller adds that).
using Apply = std::function<std::optional<std::string>(Config&, const std::string&)>;

struct Setting {
  std::string flag;     // "lease-name"; the environment variable is derived from it
  std::string fileKey;  // "leaseName"
  ValueKind kind;
  std::string typeName;  // for --help
  std::string help;
  Apply apply;
};

std::optional<std::string> parseBoolean(const std::string& text, bool& out) {
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "true" || lower == "1" || lower == "yes") {
    out = true;
    return std::nullopt;
  }
  if (lower == "false" || lower == "0" || lower == "no") {
    out = false;
    return std::nullopt;
  }
  return "\"" + text + "\" is not a boolean (use true or false)";
}

Apply text(std::string Config::*member) {
  return [member](Config& c, const std::string& value) -> std::optional<std::string> {
    c.*member = value;
    return std::nullopt;
  };
}

Apply optionalText(std::optional<std::string> Config::*member) {
  return [member](Config& c, const std::string& value) -> std::optional<std::string> {
    if (value.empty()) {
      (c.*member).reset();
    } else {
      c.*member = value;
    }
    return std::nullopt;
  };
}

Apply duration(std::function<election::Duration&(Config&)> field) {
  return [field](Config& c, const std::string& value) -> std::optional<std::string> {
    auto parsed = DurationParser::parse(value);
    if (auto* error = std::get_if<ConfigError>(&parsed)) return error->message;
    field(c) = std::get<election::Duration>(parsed);
    return std::nullopt;
  };
}

Apply address(ListenAddress Config::*member) {
  return [member](Config& c, const std::string& value) -> std::optional<std::string> {
    auto parsed = ListenAddress::parse(value);
    if (auto* error = std::get_if<ConfigError>(&parsed)) return error->message;
    c.*member = std::get<ListenAddress>(parsed);
    return std::nullopt;
  };
}

template <class Enum>
Apply choice(Enum Config::*member, std::vector<Enum> values) {
  return [member, values](Config& c, const std::string& value) -> std::optional<std::string> {
    std::string names;
    for (const Enum candidate : values) {
      if (value == toString(candidate)) {
        c.*member = candidate;
        return std::nullopt;
      }
      names += (names.empty() ? "" : ", ") + std::string(toString(candidate));
    }
    return "\"" + value + "\" is not one of " + names;
  };
}

Apply boolean(bool Config::*member) {
  return [member](Config& c, const std::string& value) -> std::optional<std::string> {
    return parseBoolean(value, c.*member);
  };
}

// The order here is the order of --help.
const std::vector<Setting>& settings() {
  static const std::vector<Setting> table = {
      {"lease-name", "leaseName", ValueKind::Text, "NAME",
       "Name of the Lease object to compete for (required)", text(&Config::leaseName)},
      {"lease-namespace", "leaseNamespace", ValueKind::Text, "NAMESPACE",
       "Namespace of the Lease (default: $POD_NAMESPACE, the service-account namespace, the "
       "kubeconfig context's namespace, then \"default\")",
       optionalText(&Config::leaseNamespace)},
      {"identity", "identity", ValueKind::Text, "ID",
       "This candidate's identity (default: $POD_NAME or the hostname, plus _ and 8 random hex "
       "digits)",
       text(&Config::identity)},
      {"lease-duration", "leaseDuration", ValueKind::Duration, "DURATION",
       "How long followers wait after the last renewal before taking over (default 15s)",
       duration([](Config& c) -> election::Duration& { return c.timings.leaseDuration; })},
      {"renew-deadline", "renewDeadline", ValueKind::Duration, "DURATION",
       "How long the leader keeps claiming leadership without a successful renewal (default 10s)",
       duration([](Config& c) -> election::Duration& { return c.timings.renewDeadline; })},
      {"retry-period", "retryPeriod", ValueKind::Duration, "DURATION",
       "How often the leader renews and a polling follower retries (default 2s)",
       duration([](Config& c) -> election::Duration& { return c.timings.retryPeriod; })},
      {"release-cooldown", "releaseCooldown", ValueKind::Duration, "DURATION",
       "After releasing the lease, how long this identity stays away from it (default: the "
       "lease duration)",
       duration([](Config& c) -> election::Duration& { return c.releaseCooldown; })},
      {"kubeconfig", "kubeconfig", ValueKind::Text, "PATH",
       "kubeconfig file (default: in-cluster, else $KUBECONFIG, else ~/.kube/config)",
       optionalText(&Config::kubeconfig)},
      {"context", "context", ValueKind::Text, "NAME", "kubeconfig context to use",
       optionalText(&Config::context)},
      {"http-address", "httpAddress", ValueKind::Address, "HOST:PORT",
       "Status API (/leader, /leader/watch) listen address (default 127.0.0.1:4040)",
       address(&Config::httpAddress)},
      {"probe-address", "probeAddress", ValueKind::Address, "HOST:PORT",
       "Probe server (/healthz, /readyz, /metrics) listen address (default 0.0.0.0:9102)",
       address(&Config::probeAddress)},
      {"status-file", "statusFile", ValueKind::Text, "PATH",
       "Write the leader status JSON to this file on every change (default: off)",
       text(&Config::statusFile)},
      {"pod-label", "podLabel", ValueKind::Text, "KEY",
       "Keep KEY=true|false on this pod's labels (needs POD_NAME, POD_NAMESPACE; default: off)",
       text(&Config::podLabel)},
      {"follower-mode", "followerMode", ValueKind::Choice, "watch|poll",
       "How followers notice changes: watch the Lease, or poll it every retry period (default "
       "watch)",
       choice(&Config::followerMode, {FollowerMode::Watch, FollowerMode::Poll})},
      {"log-format", "logFormat", ValueKind::Choice, "text|json", "Log format (default text)",
       choice(&Config::logFormat, {LogFormat::Text, LogFormat::Json})},
      {"log-level", "logLevel", ValueKind::Choice, "debug|info|warn|error",
       "Least severe level to log (default info)",
       choice(&Config::logLevel,
              {LogLevel::Debug, LogLevel::Info, LogLevel::Warn, LogLevel::Error})},
      {"print-config", "printConfig", ValueKind::Boolean, "",
       "Print the effective configuration as YAML and exit", boolean(&Config::printConfig)},
  };
  return table;
}

const char* expectedInFile(ValueKind kind) {
  switch (kind) {
    case ValueKind::Duration:
      return "a duration such as 15s";
    case ValueKind::Boolean:
      return "true or false";
    case ValueKind::Address:
      return "host:port";
    default:
      return "a string";
  }
}

const char* shapeName(ConfigFileEntry::Shape shape) {
  switch (shape) {
    case ConfigFileEntry::Shape::List:
      return "a list";
    case ConfigFileEntry::Shape::Map:
      return "a map";
    case ConfigFileEntry::Shape::Null:
      return "null";
    default:
      return "a scalar";
  }
}

// Levenshtein distance, to suggest the key that was probably meant.
std::size_t editDistance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string unknownKeyMessage(const std::string& key) {
  std::string best;
  std::size_t bestDistance = 4;  // suggest only close matches
  for (const auto& setting : settings()) {
    const std::size_t d = editDistance(key, setting.fileKey);
    if (d < bestDistance) {
      bestDistance = d;
      best = setting.fileKey;
    }
  }
  std::string message = "unknown key";
  if (!best.empty()) message += " (did you mean " + best + "?)";
  return message;
}

// Checks that need the merged values. `origins` says where each set value came from.
void validate(const Config& config, const std::map<std::string, std::string>& origins,
              const std::set<std::string>& unparsed, std::vector<std::string>& problems) {
  const auto name = [&](const std::string& flag) {
    const auto it = origins.find(flag);
    std::string text = "--" + flag;
    if (it != origins.end() && it->second != text) text += " (from " + it->second + ")";
    return text;
  };
  if (config.leaseName.empty() && !unparsed.contains("lease-name")) {
    problems.push_back("--lease-name is required (or " +
                       ConfigLoader::environmentName("lease-name") +
                       ", or leaseName in the config file)");
  } else if (!config.leaseName.empty()) {
    if (auto problem = KubernetesNameRules::dns1123Subdomain(config.leaseName)) {
      problems.push_back(name("lease-name") + ": \"" + config.leaseName + "\" " + *problem);
    }
  }
  if (config.leaseNamespace) {
    if (auto problem = KubernetesNameRules::dns1123Label(*config.leaseNamespace)) {
      problems.push_back(name("lease-namespace") + ": \"" + *config.leaseNamespace + "\" " +
                         *problem);
    }
  }
  if (config.identity.empty() && !unparsed.contains("identity"))
    problems.push_back(name("identity") + ": must not be empty");
  if (!config.podLabel.empty()) {
    if (auto problem = KubernetesNameRules::labelKey(config.podLabel)) {
      problems.push_back(name("pod-label") + ": \"" + config.podLabel +
                         "\" is not a valid label key: " + *problem);
    }
  }
  // A timing that did not parse has already been reported; comparing the default in its place
  // would only add a confusing second message.
  const bool timingsParsed = !unparsed.contains("lease-duration") &&
                             !unparsed.contains("renew-deadline") &&
                             !unparsed.contains("retry-period");
  if (timingsParsed) {
    if (auto problem = config.timings.validate()) problems.push_back(*problem);
  }
}

std::string defaultIdentity(const ConfigLoader::Environment& environment,
                            const ConfigLoader::IdentitySources& sources) {
  std::string base;
  const auto podName = environment.find("POD_NAME");
  if (podName != environment.end() && !podName->second.empty()) {
    base = podName->second;
  } else if (sources.hostname) {
    base = sources.hostname();
  }
  if (base.empty()) base = "leasehold";
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, "_%08x",
                static_cast<unsigned>(sources.random32 ? sources.random32() : 0));
  return base + suffix;
}

}  // namespace

ConfigLoader::ConfigLoader(Environment environment, IdentitySources identity)
    : environment_(std::move(environment)), identity_(std::move(identity)) {}

std::string ConfigLoader::environmentName(const std::string& flag) {
  std::string name = kEnvironmentPrefix;
  for (const char c : flag) {
    name.push_back(c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  }
  return name;
}

ConfigLoader::Environment ConfigLoader::processEnvironment() {
  Environment environment;
  for (char** entry = environ; entry && *entry; ++entry) {
    const std::string text(*entry);
    const auto equals = text.find('=');
    if (equals == std::string::npos) continue;
    environment.emplace(text.substr(0, equals), text.substr(equals + 1));
  }
  return environment;
}

ConfigLoader::IdentitySources ConfigLoader::systemIdentitySources() {
  return IdentitySources{
      [] {
        char name[HOST_NAME_MAX + 1] = {};
        if (::gethostname(name, sizeof name - 1) != 0) return std::string();
        return std::string(name);
      },
      [] {
        std::random_device device;
        return static_cast<std::uint32_t>(device());
      },
  };
}

ConfigOutcome ConfigLoader::load(int argc, const char* const* argv) const {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i)
    args.emplace_back(argv[i]);
  return load(args);
}

ConfigOutcome ConfigLoader::load(const std::vector<std::string>& args) const {
  CLI::App app{"leasehold: Kubernetes leader election for the container next to it", "leasehold"};
  app.set_help_flag("-h,--help", "Print this help and exit");
  app.footer(
      "Every flag can also be set in the environment as LEASEHOLD_<FLAG> (e.g. "
      "LEASEHOLD_LEASE_NAME) or in the YAML file given by --config with camelCase keys (e.g. "
      "leaseName). Flags win over the environment, which wins over the file.");

  std::map<std::string, std::string> flagText;
  std::map<std::string, bool> flagBoolean;
  std::map<std::string, CLI::Option*> options;
  for (const auto& setting : settings()) {
    if (setting.kind == ValueKind::Boolean) {
      options[setting.flag] =
          app.add_flag("--" + setting.flag, flagBoolean[setting.flag], setting.help);
    } else {
      options[setting.flag] =
          app.add_option("--" + setting.flag, flagText[setting.flag], setting.help)
              ->type_name(setting.typeName);
    }
  }
  std::string configPath;
  auto* configOption =
      app.add_option("--config", configPath, "YAML configuration file (also LEASEHOLD_CONFIG)")
          ->type_name("PATH");
  bool version = false;
  app.add_flag("--version", version, "Print the version and exit");

  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 wants them reversed
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    return HelpRequested{app.help()};
  } catch (const CLI::CallForAllHelp&) {
    return HelpRequested{app.help("", CLI::AppFormatMode::All)};
  } catch (const CLI::ParseError& e) {
    return ConfigError{std::string(e.what()) + " (see --help)"};
  }
  if (version) return VersionRequested{};

  Config config;
  std::vector<std::string> problems;
  std::map<std::string, std::string> origins;  // flag -> where its value came from
  std::set<std::string> unparsed;              // flags whose value was rejected

  // The file, if any.
  std::optional<std::string> filePath;
  if (configOption->count() > 0) {
    filePath = configPath;
  } else if (const auto env = environment_.find(environmentName("config"));
             env != environment_.end() && !env->second.empty()) {
    filePath = env->second;
  }
  std::optional<ConfigFile> file;
  std::map<std::string, const ConfigFileEntry*> fileEntries;
  if (filePath) {
    auto read = ConfigFile::read(*filePath);
    if (auto* error = std::get_if<ConfigError>(&read)) return *error;
    file = std::move(std::get<ConfigFile>(read));
    config.configFile = filePath;
    for (const auto& entry : file->entries()) {
      const bool known = std::any_of(settings().begin(), settings().end(),
                                     [&](const Setting& s) { return s.fileKey == entry.key; });
      if (!known) {
        problems.push_back(file->describe(entry) + ": " + unknownKeyMessage(entry.key));
        continue;
      }
      fileEntries[entry.key] = &entry;
    }
  }

  // Each setting from the strongest source that has it.
  for (const auto& setting : settings()) {
    std::string origin;
    std::optional<std::string> value;
    if (options.at(setting.flag)->count() > 0) {
      origin = "--" + setting.flag;
      value = setting.kind == ValueKind::Boolean ? (flagBoolean[setting.flag] ? "true" : "false")
                                                 : flagText[setting.flag];
    } else if (const auto env = environment_.find(environmentName(setting.flag));
               env != environment_.end() && !env->second.empty()) {
      origin = env->first;
      value = env->second;
    } else if (const auto entry = fileEntries.find(setting.fileKey); entry != fileEntries.end()) {
      const ConfigFileEntry& e = *entry->second;
      origin = file->describe(e);
      if (e.shape == ConfigFileEntry::Shape::Null) continue;  // "key:" with no value: unset
      if (e.shape != ConfigFileEntry::Shape::Scalar) {
        problems.push_back(origin + ": expected " + expectedInFile(setting.kind) + ", got " +
                           shapeName(e.shape));
        unparsed.insert(setting.flag);
        continue;
      }
      value = e.scalar;
    }
    if (!value) continue;
    origins[setting.flag] = origin;
    if (!isValidUtf8(*value)) {
      problems.push_back(origin + ": not valid UTF-8");
      unparsed.insert(setting.flag);
      continue;
    }
    if (auto problem = setting.apply(config, *value)) {
      problems.push_back(origin + ": " + *problem);
      unparsed.insert(setting.flag);
    }
  }

  // Defaults that depend on other values.
  if (!origins.contains("identity")) config.identity = defaultIdentity(environment_, identity_);
  if (!origins.contains("release-cooldown")) config.releaseCooldown = config.timings.leaseDuration;

  validate(config, origins, unparsed, problems);
  if (!problems.empty()) {
    std::string message;
    for (const auto& problem : problems)
      message += (message.empty() ? "" : "\n") + problem;
    return ConfigError{message};
  }
  return config;
}

}  // namespace leasehold::config
