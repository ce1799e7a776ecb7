// kubectl leasehold's command line: what each form means, and every bad form's message names
// the flag or word at fault.
#include "kubectl/PluginArgs.h"

#include <gtest/gtest.h>

namespace leasehold::kubectl {
namespace {

using namespace std::chrono_literals;

std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::string w;
  for (char c : line) {
    if (c == ' ') {
      if (!w.empty()) out.push_back(w);
      w.clear();
    } else {
      w += c;
    }
  }
  if (!w.empty()) out.push_back(w);
  return out;
}

PluginOptions ok(const std::string& line) {
  auto r = PluginArgs::parse(words(line));
  if (auto* e = std::get_if<std::string>(&r)) {
    ADD_FAILURE() << line << ": " << *e;
    return {};
  }
  return std::get<PluginOptions>(r);
}

TEST(PluginArgsTest, GoodLines) {
  struct Case {
    std::string line;
    std::function<bool(const PluginOptions&)> check;
  };
  const std::vector<Case> cases{
      {"", [](auto& o) { return o.command == Command::kHelp && o.helpFor == Command::kHelp; }},
      {"--help", [](auto& o) { return o.command == Command::kHelp; }},
      {"get -h", [](auto& o) { return o.command == Command::kHelp && o.helpFor == Command::kGet; }},
      {"help handover", [](auto& o) { return o.helpFor == Command::kHandover; }},
      {"version", [](auto& o) { return o.command == Command::kVersion; }},
      {"get", [](auto& o) { return o.command == Command::kGet && o.name.empty() && !o.ns; }},
      {"get demo -n team", [](auto& o) { return o.name == "demo" && o.ns == "team"; }},
      {"get -nteam demo", [](auto& o) { return o.name == "demo" && o.ns == "team"; }},
      {"get --namespace=team", [](auto& o) { return o.ns == "team"; }},
      {"-n team get demo", [](auto& o) { return o.ns == "team" && o.command == Command::kGet; }},
      {"get -A", [](auto& o) { return o.allNamespaces; }},
      {"get --all-namespaces -o wide",
       [](auto& o) { return o.allNamespaces && o.output == OutputFormat::kWide; }},
      {"get demo -ojson", [](auto& o) { return o.output == OutputFormat::kJson; }},
      {"get demo --output=json", [](auto& o) { return o.output == OutputFormat::kJson; }},
      {"get --context kind-dev --kubeconfig /tmp/k",
       [](auto& o) {
         return o.context == "kind-dev" && o.kubeconfig == std::filesystem::path("/tmp/k");
       }},
      {"get --request-timeout 2s", [](auto& o) { return o.requestTimeout == 2000ms; }},
      {"handover demo --to web-1",
       [](auto& o) {
         return o.command == Command::kHandover && o.to == "web-1" && !o.wait && !o.timeout;
       }},
      {"handover demo --to=web-1 --wait",
       [](auto& o) { return o.wait && o.timeout == PluginArgs::kDefaultWaitTimeout; }},
      {"handover --wait --timeout 5s demo --to web-1",
       [](auto& o) { return o.name == "demo" && o.timeout == 5000ms; }},
      {"watch demo",
       [](auto& o) {
         return o.command == Command::kWatch && o.name == "demo" && !o.timeout && !o.maxEvents;
       }},
      {"watch demo --max-events 3 --timeout 1m",
       [](auto& o) { return o.maxEvents == 3 && o.timeout == 60000ms; }},
      {"get -- -odd-name", [](auto& o) { return o.name == "-odd-name"; }},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.line);
    EXPECT_TRUE(c.check(ok(c.line)));
  }
}

TEST(PluginArgsTest, BadLinesNameTheFlag) {
  struct Case {
    std::string line;
    std::string message;  // a substring of the one line
  };
  const std::vector<Case> cases{
      {"frobnicate", "unknown command \"frobnicate\""},
      {"get --bogus", "unknown flag --bogus"},
      {"get -x", "unknown flag -x"},
      {"get -n", "flag -n needs a value"},
      {"get --namespace=", "flag --namespace needs a namespace"},
      {"get -o yaml", "flag -o: wide or json, got \"yaml\""},
      {"get --output=table", "flag --output: wide or json"},
      {"get -A=yes", "flag -A takes no value"},
      {"get demo -A", "flag -A/--all-namespaces"},
      {"get a b", "unexpected argument \"b\" for get"},
      {"get --to web-1", "flag --to is not valid for get"},
      {"watch demo -o json", "flag -o is not valid for watch"},
      {"handover demo -A", "flag -A is not valid for handover"},
      {"get --wait", "flag --wait is not valid for get"},
      {"get --request-timeout 5", "--request-timeout"},
      {"get --request-timeout 0s", "--request-timeout: must be more than 0"},
      {"handover --to web-1", "handover needs a Lease NAME"},
      {"handover demo", "handover needs --to"},
      {"handover demo --to", "flag --to needs a value"},
      {"handover demo --to=", "flag --to needs a pod name or identity"},
      {"handover demo --to web-1 --timeout 5s", "flag --timeout needs --wait"},
      {"handover demo --to web-1 --wait --timeout soon", "--timeout"},
      {"watch", "watch needs a Lease NAME"},
      {"watch demo --max-events 0", "flag --max-events: a whole number of at least 1"},
      {"watch demo --max-events 2x", "flag --max-events"},
      {"version extra", "unexpected argument \"extra\""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.line);
    auto r = PluginArgs::parse(words(c.line));
    ASSERT_TRUE(std::holds_alternative<std::string>(r));
    const auto& message = std::get<std::string>(r);
    EXPECT_NE(message.find(c.message), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
  }
}

TEST(PluginArgsTest, UsageShowsKubectlLeasehold) {
  for (Command c : {Command::kHelp, Command::kGet, Command::kHandover, Command::kWatch}) {
    const std::string u = PluginArgs::usage(c);
    EXPECT_NE(u.find("kubectl leasehold"), std::string::npos) << u;
    EXPECT_EQ(u.find("kubectl-leasehold"), std::string::npos) << u;
    EXPECT_EQ(u.find("--max-events"), std::string::npos) << "a test bound, not advertised";
  }
  EXPECT_NE(PluginArgs::usage(Command::kGet).find("informational"), std::string::npos);
}

}  // namespace
}  // namespace leasehold::kubectl
