// Kubeconfig loading as kubectl does it: file merging and precedence, contexts, clusters, users,
// certificates from files or data, exec plugins and in-file errors with the field path. Long
// because each rule of the merge is its own table row or test, which is what makes a
// regression name the rule it broke.
#include "cluster/Kubeconfig.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "MinimalKubeconfig.h"
#include "TemporaryDirectory.h"
#include "TestPem.h"
#include "cluster/RestConfigLoader.h"
#include "net/Base64.h"

namespace leasehold::cluster {
namespace {

using testing::HasSubstr;
using testing_support::kCaPem;
using testing_support::kClientCertPem;
using testing_support::kClientKeyPem;
using testing_support::minimalKubeconfig;

std::string b64(const std::string& s) {
  return net::Base64::encode(s);
}

class KubeconfigTest : public testing::Test {
 protected:
  // Loads with KUBECONFIG set to `files` (joined with ':').
  LoadResult<RestConfig> loadList(const std::vector<std::filesystem::path>& files,
                                  std::optional<std::string> context = std::nullopt) {
    std::string list;
    for (const auto& f : files)
      list += (list.empty() ? "" : ":") + f.string();
    return RestConfigLoader::loadKubeconfig({std::nullopt, std::move(context)},
                                            {{"KUBECONFIG", list}});
  }

  LoadResult<RestConfig> loadOne(const std::string& yaml,
                                 std::optional<std::string> context = std::nullopt) {
    return RestConfigLoader::loadKubeconfig({dir_.write("config", yaml), std::move(context)}, {});
  }

  std::string path(const std::string& name) const { return (dir_.path() / name).string(); }

  testing_support::TemporaryDirectory dir_;
};

TEST_F(KubeconfigTest, ResolvesCurrentContext) {
  const auto config = loadOne(R"(apiVersion: v1
kind: Config
preferences: {}
clusters:
- name: dev
  cluster:
    server: https://dev.example:6443/
    certificate-authority-data: )" +
                              b64(kCaPem) + R"(
    tls-server-name: kubernetes.default
    extensions: [{name: x, extension: {}}]
users:
- name: me
  user:
    token: the-token
contexts:
- name: dev
  context: {cluster: dev, user: me, namespace: team-a}
current-context: dev
)");
  ASSERT_TRUE(config) << config.message();
  EXPECT_EQ(config->server, "https://dev.example:6443");
  EXPECT_EQ(config->caPem, kCaPem);
  EXPECT_EQ(config->tlsServerName, "kubernetes.default");
  EXPECT_FALSE(config->insecureSkipTlsVerify);
  EXPECT_EQ(config->defaultNamespace, "team-a");
  ASSERT_TRUE(config->tokenSource);
  EXPECT_EQ(config->tokenSource->token().token, "the-token");
  EXPECT_EQ(config->source, "kubeconfig " + path("config") + ", context \"dev\"");
}

TEST_F(KubeconfigTest, ServerWithoutSchemeGetsHttps) {
  const auto config = loadOne(R"(
clusters: [{name: c, cluster: {server: "10.0.0.1:6443"}}]
contexts: [{name: x, context: {cluster: c}}]
current-context: x
)");
  ASSERT_TRUE(config) << config.message();
  EXPECT_EQ(config->server, "https://10.0.0.1:6443");
  EXPECT_FALSE(config->tokenSource);
  EXPECT_FALSE(config->defaultNamespace);
  EXPECT_THAT(loadOne(R"(
clusters: [{name: c, cluster: {server: "ftp://x"}}]
contexts: [{name: x, context: {cluster: c}}]
current-context: x
)")
                  .message(),
              HasSubstr("clusters[0].cluster.server: \"ftp://x\": scheme must be https or http"));
}

TEST_F(KubeconfigTest, MergeFirstFileWinsWholeEntries) {
  const auto first = dir_.write("a/config", R"(
current-context: one
clusters:
- name: shared
  cluster: {server: "https://first:1"}
contexts:
- name: one
  context: {cluster: shared, user: u}
users:
- name: u
  user: {token: first-token}
)");
  const auto second = dir_.write("b/config", R"(
current-context: two
clusters:
- name: shared
  cluster: {server: "https://second:2", insecure-skip-tls-verify: true}
- name: only-second
  cluster: {server: "https://only-second:3"}
contexts:
- name: one
  context: {cluster: only-second}
- name: two
  context: {cluster: only-second, user: u, namespace: ns2}
users:
- name: u
  user: {token: second-token}
)");
  auto config = loadList({first, second});
  ASSERT_TRUE(config) << config.message();
  // current-context, context "one", cluster "shared" and user "u" all from the first file; the
  // second file's "shared" is not merged in field by field (no insecure flag).
  EXPECT_EQ(config->server, "https://first:1");
  EXPECT_FALSE(config->insecureSkipTlsVerify);
  EXPECT_EQ(config->tokenSource->token().token, "first-token");

  config = loadList({first, second}, "two");
  ASSERT_TRUE(config) << config.message();
  EXPECT_EQ(config->server, "https://only-second:3");
  EXPECT_EQ(config->defaultNamespace, "ns2");
  EXPECT_EQ(config->tokenSource->token().token, "first-token");

  // Reversed order: the second file wins everything it defines.
  config = loadList({second, first});
  ASSERT_TRUE(config) << config.message();
  EXPECT_EQ(config->server, "https://only-second:3");
  EXPECT_EQ(config->tokenSource->token().token, "second-token");
}

TEST_F(KubeconfigTest, CurrentContextFromALaterFileWhenTheFirstHasNone) {
  const auto first = dir_.write("a", R"(
clusters: [{name: c, cluster: {server: "https://c:1"}}]
contexts: [{name: x, context: {cluster: c}}]
)");
  const auto second = dir_.write("b", "current-context: x\n");
  const auto config = loadList({first, second});
  ASSERT_TRUE(config) << config.message();
  EXPECT_EQ(config->server, "https://c:1");
}

TEST_F(KubeconfigTest, MissingFilesInTheListAreSkipped) {
  const auto real = dir_.write("real", minimalKubeconfig("https://c:1"));
  auto config = loadList({dir_.path() / "missing", real});
  ASSERT_TRUE(config) << config.message();
  EXPECT_EQ(config->server, "https://c:1");

  config = loadList({dir_.path() / "missing1", dir_.path() / "missing2"});
  ASSERT_FALSE(config);
  EXPECT_THAT(config.message(), HasSubstr("no kubeconfig found"));
  EXPECT_THAT(config.message(), HasSubstr(path("missing2")));
}

TEST_F(KubeconfigTest, ExplicitMissingFileIsAnError) {
  const auto config = RestConfigLoader::loadKubeconfig({dir_.path() / "nope", std::nullopt}, {});
  ASSERT_FALSE(config);
  EXPECT_THAT(config.message(), HasSubstr("kubeconfig " + path("nope") + ": cannot read"));
}

TEST_F(KubeconfigTest, CandidatePaths) {
  using Paths = std::vector<std::filesystem::path>;
  EXPECT_EQ(Kubeconfig::candidatePaths({"/x", std::nullopt}, {{"KUBECONFIG", "/a"}}), Paths{"/x"});
  EXPECT_EQ(Kubeconfig::candidatePaths({}, {{"KUBECONFIG", "/a::/b:/a"}, {"HOME", "/h"}}),
            (Paths{"/a", "/b"}));
  EXPECT_EQ(Kubeconfig::candidatePaths({}, {{"KUBECONFIG", ""}, {"HOME", "/h"}}),
            Paths{"/h/.kube/config"});
  EXPECT_TRUE(Kubeconfig::candidatePaths({}, {}).empty());
  EXPECT_THAT(RestConfigLoader::loadKubeconfig({}, {}).message(), HasSubstr("no kubeconfig"));
}

TEST_F(KubeconfigTest, RelativePathsAreRelativeToTheirFile) {
  dir_.write("conf/certs/ca.crt", kCaPem);
  dir_.write("conf/certs/client.crt", kClientCertPem);
  dir_.write("conf/certs/client.key", kClientKeyPem);
  dir_.write("conf/token", "file-token\n");
  const auto kubeconfig = dir_.write("conf/config", R"(
clusters: [{name: c, cluster: {server: "https://c:1", certificate-authority: certs/ca.crt}}]
users:
- name: u
  user:
    client-certificate: certs/client.crt
    client-key: certs/client.key
    tokenFile: token
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
)");
  // Loaded from another working directory through an absolute path.
  const auto config = loadList({kubeconfig});
  ASSERT_TRUE(config) << config.message();
  EXPECT_EQ(config->caPem, kCaPem);
  EXPECT_EQ(config->clientCertificatePem, kClientCertPem);
  EXPECT_EQ(config->clientKeyPem, kClientKeyPem);
  EXPECT_EQ(config->tokenSource->token().token, "file-token");
}

TEST_F(KubeconfigTest, DataWinsOverPath) {
  const auto config = loadOne(R"(
clusters:
- name: c
  cluster:
    server: https://c:1
    certificate-authority: does/not/exist
    certificate-authority-data: )" +
                              b64(kCaPem) + R"(
users:
- name: u
  user:
    client-certificate: nope.crt
    client-certificate-data: )" +
                              b64(kClientCertPem) + R"(
    client-key: nope.key
    client-key-data: )" + b64(kClientKeyPem) +
                              R"(
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
)");
  ASSERT_TRUE(config) << config.message();
  EXPECT_EQ(config->caPem, kCaPem);
  EXPECT_EQ(config->clientCertificatePem, kClientCertPem);
  EXPECT_EQ(config->clientKeyPem, kClientKeyPem);
  EXPECT_FALSE(config->tokenSource);
}

TEST_F(KubeconfigTest, InsecureSkipTlsVerify) {
  auto config = loadOne(R"(
clusters: [{name: c, cluster: {server: "https://c:1", insecure-skip-tls-verify: true}}]
contexts: [{name: x, context: {cluster: c}}]
current-context: x
)");
  ASSERT_TRUE(config) << config.message();
  EXPECT_TRUE(config->insecureSkipTlsVerify);
  EXPECT_TRUE(config->caPem.empty());

  config = loadOne(R"(clusters:
- name: c
  cluster:
    server: https://c:1
    certificate-authority-data: )" +
                   b64(kCaPem) + R"(
    insecure-skip-tls-verify: true
contexts: [{name: x, context: {cluster: c}}]
current-context: x
)");
  ASSERT_FALSE(config);
  EXPECT_THAT(config.message(),
              HasSubstr("kubeconfig " + path("config") +
                        ":6: clusters[0].cluster.insecure-skip-tls-verify: cannot be combined "
                        "with certificate-authority"));
}

TEST_F(KubeconfigTest, MissingContextClusterAndUserNameKeysAndLines) {
  const std::string body = R"(clusters:
- name: c
  cluster: {server: "https://c:1"}
users:
- name: u
  user: {token: t}
contexts:
- name: good
  context: {cluster: c, user: u}
- name: bad-cluster
  context:
    cluster: x
- name: bad-user
  context:
    cluster: c
    user: nobody
- name: no-cluster
  context: {user: u}
)";
  EXPECT_EQ(loadOne(body + "current-context: missing\n").message(),
            "kubeconfig " + path("config") + ":19: current-context: context \"missing\" not found");
  EXPECT_EQ(
      loadOne(body, "bad-cluster").message(),
      "kubeconfig " + path("config") + ":12: contexts[1].context.cluster: cluster \"x\" not found");
  EXPECT_EQ(
      loadOne(body, "bad-user").message(),
      "kubeconfig " + path("config") + ":16: contexts[2].context.user: user \"nobody\" not found");
  EXPECT_EQ(loadOne(body, "no-cluster").message(),
            "kubeconfig " + path("config") + ":18: contexts[3].context.cluster: missing");
  EXPECT_EQ(loadOne(body, "nope").message(),
            "kubeconfig " + path("config") + ": context \"nope\" (from --context) not found");
  EXPECT_THAT(loadOne(body).message(), HasSubstr("no current-context is set; pass --context"));
  EXPECT_TRUE(loadOne(body, "good"));
}

TEST_F(KubeconfigTest, BadDataFieldsNameKeyAndLine) {
  const std::string head = R"(clusters: [{name: c, cluster: {server: "https://c:1"}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
users:
- name: u
  user:
)";
  EXPECT_EQ(loadOne(head + "    client-certificate-data: " + b64(kClientCertPem) +
                    "\n    client-key-data: '%%%notbase64'\n")
                .message(),
            "kubeconfig " + path("config") + ":8: users[0].user.client-key-data: not valid base64");
  EXPECT_EQ(loadOne(head + "    client-certificate-data: " + b64("no pem here") +
                    "\n    client-key-data: " + b64(kClientKeyPem) + "\n")
                .message(),
            "kubeconfig " + path("config") +
                ":7: users[0].user.client-certificate-data: does not contain a PEM block");
  EXPECT_THAT(
      loadOne(head + "    client-certificate-data: " + b64(kClientCertPem) + "\n").message(),
      HasSubstr("users[0].user.client-key: missing"));
  EXPECT_THAT(loadOne(head + "    client-key: missing.key\n").message(),
              HasSubstr(":7: users[0].user.client-key: " + path("missing.key") + ": cannot read"));
}

TEST_F(KubeconfigTest, TlsServerNameAndProxyUrl) {
  EXPECT_EQ(loadOne(R"(
clusters: [{name: c, cluster: {server: "https://1.2.3.4:1", tls-server-name: api.internal}}]
contexts: [{name: x, context: {cluster: c}}]
current-context: x
)")
                ->tlsServerName,
            "api.internal");
  EXPECT_THAT(loadOne(R"(
clusters: [{name: c, cluster: {server: "https://c:1", proxy-url: "http://proxy:3128"}}]
contexts: [{name: x, context: {cluster: c}}]
current-context: x
)")
                  .message(),
              HasSubstr(":2: clusters[0].cluster.proxy-url: proxies are not supported"));
}

TEST_F(KubeconfigTest, TokenFileWinsOverToken) {
  dir_.write("tok", "from-file");
  const auto config = loadOne(R"(
clusters: [{name: c, cluster: {server: "https://c:1"}}]
users: [{name: u, user: {token: inline, tokenFile: tok}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
)");
  ASSERT_TRUE(config) << config.message();
  EXPECT_EQ(config->tokenSource->token().token, "from-file");
}

TEST_F(KubeconfigTest, StructureErrors) {
  EXPECT_EQ(loadOne("clusters: {}\n").message(),
            "kubeconfig " + path("config") + ":1: clusters: expected a list, got a map");
  EXPECT_EQ(loadOne("clusters:\n- name: c\n  cluster:\n    server: [a]\n").message(),
            "kubeconfig " + path("config") +
                ":4: clusters[0].cluster.server: expected a string, got a list");
  EXPECT_EQ(loadOne("clusters:\n- cluster: {}\n").message(),
            "kubeconfig " + path("config") + ":2: clusters[0].name: missing");
  EXPECT_EQ(loadOne("users:\n- name: u\n  user: {}\n- name: u\n  user: {}\n").message(),
            "kubeconfig " + path("config") + ":4: users[1].name: duplicate name \"u\"");
  EXPECT_EQ(
      loadOne("clusters:\n- name: c\n  cluster: {insecure-skip-tls-verify: maybe}\n").message(),
      "kubeconfig " + path("config") +
          ":3: clusters[0].cluster.insecure-skip-tls-verify: expected true or false, got a "
          "scalar");
  EXPECT_THAT(loadOne("clusters: [\n").message(),
              HasSubstr("kubeconfig " + path("config") + ":2: not valid YAML"));
  EXPECT_EQ(loadOne("- a\n").message(),
            "kubeconfig " + path("config") + ":1: expected a map, got a list");
}

TEST_F(KubeconfigTest, UnsupportedAuthIsNamed) {
  EXPECT_THAT(loadOne(R"(
clusters: [{name: c, cluster: {server: "https://c:1"}}]
users: [{name: u, user: {auth-provider: {name: gcp}}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
)")
                  .message(),
              HasSubstr("users[0].user.auth-provider: not supported"));
}

TEST_F(KubeconfigTest, ExecSettingsAreChecked) {
  const std::string head = R"(
clusters: [{name: c, cluster: {server: "https://c:1"}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
users:
- name: u
  user:
    exec:
)";
  EXPECT_THAT(loadOne(head + "      command: x\n").message(),
              HasSubstr("users[0].user.exec: apiVersion: missing"));
  EXPECT_THAT(loadOne(head + "      command: x\n      apiVersion: "
                             "client.authentication.k8s.io/v1alpha1\n")
                  .message(),
              HasSubstr("users[0].user.exec.apiVersion: \"client.authentication.k8s.io/v1alpha1\" "
                        "is not supported"));
  EXPECT_THAT(loadOne(head + "      command: x\n      apiVersion: "
                             "client.authentication.k8s.io/v1\n      interactiveMode: Always\n")
                  .message(),
              HasSubstr("users[0].user.exec.interactiveMode: \"Always\" needs a terminal"));
  EXPECT_THAT(loadOne(head + "      apiVersion: client.authentication.k8s.io/v1\n").message(),
              HasSubstr("users[0].user.exec.command: missing"));
  EXPECT_THAT(loadOne(head + "      command: x\n      apiVersion: "
                             "client.authentication.k8s.io/v1\n    token: t\n")
                  .message(),
              HasSubstr("users[0].user.exec: cannot be combined with token or tokenFile"));
  const auto ok = loadOne(head +
                          "      command: x\n      apiVersion: "
                          "client.authentication.k8s.io/v1beta1\n      interactiveMode: "
                          "IfAvailable\n");
  ASSERT_TRUE(ok) << ok.message();
  EXPECT_THAT(ok->tokenSource->describe(), HasSubstr("exec plugin \"x\""));
}

}  // namespace
}  // namespace leasehold::cluster
