#pragma once
// The command line of `kubectl leasehold` (kubectl runs the executable kubectl-leasehold with
// the words after `kubectl leasehold`). kubectl's own conventions: -n/--namespace,
// -A/--all-namespaces, --context, --kubeconfig and --request-timeout anywhere on the line, a
// flag's value as the next word or after `=`. Bad input is one message that names the flag or
// the word; nothing is guessed.
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace leasehold::kubectl {

enum class Command { kHelp, kVersion, kGet, kHandover, kWatch, kRbac };
enum class OutputFormat { kTable, kWide, kJson };

struct PluginOptions {
  Command command = Command::kHelp;
  Command helpFor = Command::kHelp;  // `help get`, `get --help`: which usage to print
  std::string name;                  // the Lease; "" = every Lease (get only)
  std::optional<std::string> ns;     // -n; unset: the context's namespace, else "default"
  bool allNamespaces = false;        // -A (get only)
  OutputFormat output = OutputFormat::kTable;
  std::optional<std::filesystem::path> kubeconfig;
  std::optional<std::string> context;
  // Every API request (not a watch): connect, TLS and the whole answer.
  std::chrono::milliseconds requestTimeout{10000};
  std::string to;              // handover --to: the identity or pod name of the next holder
  std::string serviceAccount;  // rbac --serviceaccount
  bool fastFailover = false;   // rbac --fast-failover
  bool wait = false;           // handover --wait
  // handover --wait: how long to wait (default 30s). watch: stop after this long (unset: never).
  std::optional<std::chrono::milliseconds> timeout;
  // watch: stop after this many lines (a bound for tests and scripts; not in the usage text).
  std::optional<long> maxEvents;
};

class PluginArgs {
 public:
  static constexpr std::chrono::milliseconds kDefaultWaitTimeout{30000};

  // `args` are the words after the program name. A string is the one-line reason it failed.
  static std::variant<PluginOptions, std::string> parse(const std::vector<std::string>& args);

  // The usage text of one subcommand (kHelp: the overview), ending in a newline.
  static std::string usage(Command command);
};

}  // namespace leasehold::kubectl
