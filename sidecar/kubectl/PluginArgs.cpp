#include "kubectl/PluginArgs.h"

#include <algorithm>
#include <charconv>
#include <map>

#include "config/DurationParser.h"

namespace leasehold::kubectl {
namespace {

using std::chrono::duration_cast;
using std::chrono::milliseconds;

const std::map<std::string, Command, std::less<>>& subcommands() {
  static const std::map<std::string, Command, std::less<>> m{
      {"get", Command::kGet},   {"handover", Command::kHandover}, {"watch", Command::kWatch},
      {"rbac", Command::kRbac}, {"version", Command::kVersion},   {"help", Command::kHelp}};
  return m;
}

const char* commandName(Command c) {
  switch (c) {
    case Command::kGet:
      return "get";
    case Command::kHandover:
      return "handover";
    case Command::kWatch:
      return "watch";
    case Command::kRbac:
      return "rbac";
    case Command::kVersion:
      return "version";
    case Command::kHelp:
      return "help";
  }
  return "help";
}

// Flags and the subcommands that take them ("" = every subcommand).
struct FlagSpec {
  bool takesValue;
  std::vector<Command> only;
};

const std::map<std::string, FlagSpec, std::less<>>& flagSpecs() {
  static const std::map<std::string, FlagSpec, std::less<>> m{
      {"--namespace", {true, {}}},
      {"--all-namespaces", {false, {Command::kGet}}},
      {"--context", {true, {}}},
      {"--kubeconfig", {true, {}}},
      {"--request-timeout", {true, {}}},
      {"--output", {true, {Command::kGet}}},
      {"--to", {true, {Command::kHandover}}},
      {"--wait", {false, {Command::kHandover}}},
      {"--timeout", {true, {Command::kHandover, Command::kWatch}}},
      {"--max-events", {true, {Command::kWatch}}},
      {"--serviceaccount", {true, {Command::kRbac}}},
      {"--fast-failover", {false, {Command::kRbac}}},
      {"--help", {false, {}}},
  };
  return m;
}

std::string longName(std::string_view flag) {
  if (flag == "-n") return "--namespace";
  if (flag == "-A") return "--all-namespaces";
  if (flag == "-o") return "--output";
  if (flag == "-h") return "--help";
  return std::string(flag);
}

std::optional<milliseconds> parseDuration(const std::string& flag, const std::string& value,
                                          std::string& error) {
  auto parsed = config::DurationParser::parse(value);
  if (auto* e = std::get_if<config::ConfigError>(&parsed)) {
    error = flag + ": " + e->message;
    return std::nullopt;
  }
  const auto d = duration_cast<milliseconds>(std::get<time::Duration>(parsed));
  if (d <= milliseconds::zero()) {
    error = flag + ": must be more than 0, got \"" + value + "\"";
    return std::nullopt;
  }
  return d;
}

}  // namespace

std::variant<PluginOptions, std::string> PluginArgs::parse(const std::vector<std::string>& args) {
  PluginOptions o;
  bool help = false;
  bool haveCommand = false;
  std::vector<std::string> positional;
  // (flag as written, long name, value): checked against the subcommand once it is known.
  struct Seen {
    std::string written, name, value;
  };
  std::vector<Seen> seen;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      for (++i; i < args.size(); ++i)
        positional.push_back(args[i]);
      break;
    }
    if (a.size() < 2 || a[0] != '-') {
      if (!haveCommand) {
        auto it = subcommands().find(a);
        if (it == subcommands().end()) {
          return "unknown command \"" + a + "\" (get, handover, watch, rbac, version, help)";
        }
        o.command = it->second;
        haveCommand = true;
      } else {
        positional.push_back(a);
      }
      continue;
    }
    std::string written = a;
    std::optional<std::string> value;
    if (a.rfind("--", 0) == 0) {
      if (auto eq = a.find('='); eq != std::string::npos) {
        written = a.substr(0, eq);
        value = a.substr(eq + 1);
      }
    } else if (a.size() > 2) {  // -nNS, -n=NS, -owide
      written = a.substr(0, 2);
      value = a.substr(a[2] == '=' ? 3 : 2);
    }
    const std::string name = longName(written);
    auto spec = flagSpecs().find(name);
    if (spec == flagSpecs().end()) return "unknown flag " + written;
    if (spec->second.takesValue && !value) {
      if (i + 1 >= args.size()) return "flag " + written + " needs a value";
      value = args[++i];
    } else if (!spec->second.takesValue && value) {
      return "flag " + written + " takes no value, got \"" + *value + "\"";
    }
    if (name == "--help") help = true;
    seen.push_back({written, name, value.value_or("")});
  }

  if (help || o.command == Command::kHelp) {
    o.helpFor =
        o.command == Command::kHelp && !positional.empty()
            ? (subcommands().count(positional[0]) ? subcommands().find(positional[0])->second
                                                  : Command::kHelp)
            : o.command;
    o.command = Command::kHelp;
    return o;
  }

  std::string error;
  for (const Seen& s : seen) {
    const auto& only = flagSpecs().at(s.name).only;
    if (!only.empty() && std::find(only.begin(), only.end(), o.command) == only.end()) {
      return "flag " + s.written + " is not valid for " + commandName(o.command);
    }
    if (s.name == "--namespace") {
      if (s.value.empty()) return "flag " + s.written + " needs a namespace";
      o.ns = s.value;
    } else if (s.name == "--all-namespaces") {
      o.allNamespaces = true;
    } else if (s.name == "--context") {
      o.context = s.value;
    } else if (s.name == "--kubeconfig") {
      if (s.value.empty()) return "flag " + s.written + " needs a file";
      o.kubeconfig = s.value;
    } else if (s.name == "--request-timeout") {
      auto d = parseDuration(s.written, s.value, error);
      if (!d) return error;
      o.requestTimeout = *d;
    } else if (s.name == "--output") {
      if (s.value == "wide") {
        o.output = OutputFormat::kWide;
      } else if (s.value == "json") {
        o.output = OutputFormat::kJson;
      } else {
        return "flag " + s.written + ": wide or json, got \"" + s.value + "\"";
      }
    } else if (s.name == "--to") {
      if (s.value.empty()) return "flag " + s.written + " needs a pod name or identity";
      o.to = s.value;
    } else if (s.name == "--serviceaccount") {
      if (s.value.empty()) return "flag " + s.written + " needs a ServiceAccount name";
      o.serviceAccount = s.value;
    } else if (s.name == "--wait") {
      o.wait = true;
    } else if (s.name == "--fast-failover") {
      o.fastFailover = true;
    } else if (s.name == "--timeout") {
      auto d = parseDuration(s.written, s.value, error);
      if (!d) return error;
      o.timeout = *d;
    } else if (s.name == "--max-events") {
      long n = 0;
      const char* end = s.value.data() + s.value.size();
      auto [p, ec] = std::from_chars(s.value.data(), end, n);
      if (ec != std::errc() || p != end || n < 1) {
        return "flag " + s.written + ": a whole number of at least 1, got \"" + s.value + "\"";
      }
      o.maxEvents = n;
    }
  }

  const std::string cmd = commandName(o.command);
  const std::size_t maxPositional = o.command == Command::kVersion ? 0 : 1;
  if (positional.size() > maxPositional) {
    return "unexpected argument \"" + positional[maxPositional] + "\" for " + cmd;
  }
  if (!positional.empty()) o.name = positional[0];
  if ((o.command == Command::kHandover || o.command == Command::kWatch ||
       o.command == Command::kRbac) &&
      o.name.empty()) {
    return cmd + " needs a Lease NAME (kubectl leasehold " + cmd + " NAME)";
  }
  if (o.allNamespaces && !o.name.empty()) {
    return "flag -A/--all-namespaces lists every Lease: give no NAME with it";
  }
  if (o.command == Command::kRbac && o.serviceAccount.empty()) {
    return "rbac needs --serviceaccount SA: the grants are for the pods' ServiceAccount";
  }
  if (o.command == Command::kHandover) {
    if (o.to.empty()) {
      return "handover needs --to POD|IDENTITY: a request names the replica that should lead";
    }
    if (o.timeout && !o.wait) return "flag --timeout needs --wait";
    if (o.wait && !o.timeout) o.timeout = kDefaultWaitTimeout;
  }
  return o;
}

std::string PluginArgs::usage(Command command) {
  const std::string common =
      "\nFlags for every command (as kubectl's):\n"
      "  -n, --namespace NS       the Lease's namespace (default: the context's, else default)\n"
      "      --context NAME       the kubeconfig context to use\n"
      "      --kubeconfig FILE    the kubeconfig (default: $KUBECONFIG, in-cluster, "
      "~/.kube/config)\n"
      "      --request-timeout D  bound on each API request (default 10s)\n"
      "  -h, --help               this text\n";
  switch (command) {
    case Command::kGet:
      return "Usage: kubectl leasehold get [NAME] [-n NS | -A] [-o wide|json]\n\n"
             "Shows Leases with the election's view: NAME, HOLDER, POD (the holder's\n"
             "leasehold.io/holder-pod), TOKEN (leaseTransitions, the fencing token), RENEWED\n"
             "(age of renewTime), EXPIRES (renewTime + leaseDurationSeconds - now, or expired)\n"
             "and PREFERRED (a pending handover request). RENEWED and EXPIRES compare the\n"
             "holder's wall clock with this machine's: informational only, never a basis for\n"
             "deciding who leads.\n\n"
             "  -A, --all-namespaces     every namespace (adds NAMESPACE)\n"
             "  -o, --output FORMAT      wide (adds ACQUIRED, DURATION, ADDRESS) or json\n" +
             common;
    case Command::kHandover:
      return "Usage: kubectl leasehold handover NAME --to POD|IDENTITY [--wait [--timeout D]]\n\n"
             "Asks the leader to hand the Lease to the named replica: writes the annotation\n"
             "leasehold.io/preferred-holder (a merge patch, as kubectl annotate does). The\n"
             "leader stops claiming, releases, and the named replica takes the Lease with the\n"
             "next token.\n\n"
             "      --to POD|IDENTITY    the next holder: its pod name or its identity\n"
             "      --wait               wait until it holds the Lease; print how long it took\n"
             "      --timeout D          how long --wait waits (default 30s)\n" +
             common;
    case Command::kWatch:
      return "Usage: kubectl leasehold watch NAME [--timeout D]\n\n"
             "One line per change of holder or token: TIME (this machine's clock), HOLDER,\n"
             "POD, TOKEN. Runs until interrupted (Ctrl-C) or for --timeout.\n\n"
             "      --timeout D          stop after D\n" +
             common;
    case Command::kRbac:
      return "Usage: kubectl leasehold rbac NAME --serviceaccount SA [-n NS] [--fast-failover]\n\n"
             "Prints, for `kubectl apply -f -`, what a workload needs for leader election on\n"
             "the Lease NAME in NS (default: the context's namespace, else default): the Lease\n"
             "(empty: the first replica takes it), a Role leasehold-NAME that may get, update,\n"
             "watch and list that Lease alone and create/patch Events, and a RoleBinding to\n"
             "the ServiceAccount SA. No create on leases: Kubernetes cannot limit it by name.\n"
             "The same objects as an entry of the chart's `leases` value. Asks nothing of\n"
             "the cluster.\n\n"
             "      --serviceaccount SA  the ServiceAccount the workload's pods run as\n"
             "      --fast-failover      also get/list/watch on pods, for sidecars run with\n"
             "                           --fast-failover (leasehold.io/fast-failover: \"true\")\n" +
             common;
    case Command::kVersion:
      return "Usage: kubectl leasehold version\n";
    case Command::kHelp:
      break;
  }
  return "kubectl leasehold: the leasehold election's Leases, for operators.\n\n"
         "Usage:\n"
         "  kubectl leasehold get [NAME] [-n NS | -A] [-o wide|json]\n"
         "  kubectl leasehold handover NAME --to POD|IDENTITY [--wait [--timeout D]]\n"
         "  kubectl leasehold watch NAME\n"
         "  kubectl leasehold rbac NAME --serviceaccount SA\n"
         "  kubectl leasehold version\n\n"
         "`kubectl leasehold COMMAND --help` describes each command.\n" +
         common;
}

}  // namespace leasehold::kubectl
