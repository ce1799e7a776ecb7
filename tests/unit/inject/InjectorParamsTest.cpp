// The parameters ConfigMap as files: every key needed, the ports checked, a missing directory
// or key named.
#include "inject/InjectorParams.h"

#include <gtest/gtest.h>

#include "InjectorParamsData.h"
#include "TemporaryDirectory.h"
#include "inject/InjectorFiles.h"
#include "inject/ParamsDirectory.h"
#include "inject/SidecarPatch.h"

namespace leasehold::inject {
namespace {

const std::map<std::string, std::string> kChart = testing::injectorParamsData();

TEST(InjectorParams, ReadsEveryKey) {
  const auto parsed = InjectorParams::fromData(kChart);
  ASSERT_TRUE(std::holds_alternative<InjectorParams>(parsed));
  const auto& p = std::get<InjectorParams>(parsed);
  EXPECT_EQ(p.image, "ghcr.io/leasehold/leasehold:1.0");
  EXPECT_EQ(p.probePort, "9102");
  EXPECT_EQ(p.probePortNumber, 9102);
  EXPECT_EQ(p.memoryLimit, "64Mi");
}

// values.resources without a limit (or a request): the key is "" or missing and the sidecar
// gets only the quantities that are set, as the policy's variables build them.
TEST(InjectorParams, ResourcesAreOptional) {
  auto data = kChart;
  data.erase("memoryLimit");
  data["cpuRequest"] = "";
  data["cpuLimit"] = "100m";
  const auto parsed = InjectorParams::fromData(data);
  ASSERT_TRUE(std::holds_alternative<InjectorParams>(parsed)) << std::get<std::string>(parsed);
  const auto& p = std::get<InjectorParams>(parsed);
  EXPECT_EQ(p.cpuRequest, "");
  EXPECT_EQ(p.memoryRequest, "16Mi");
  EXPECT_EQ(p.cpuLimit, "100m");
  EXPECT_EQ(p.memoryLimit, "");
  const auto sidecar = SidecarPatch::sidecar({{"leasehold.io/lease", "shop"}}, p);
  EXPECT_EQ(sidecar["resources"],
            nlohmann::json::parse(R"({"requests":{"memory":"16Mi"},"limits":{"cpu":"100m"}})"));
}

TEST(InjectorParams, NamesTheKeyThatIsMissingOrBad) {
  const std::vector<std::tuple<std::string, std::optional<std::string>, std::string>> cases = {
      {"image", std::nullopt, "key image is missing"},
      {"logFormat", std::nullopt, "key logFormat is missing"},
      {"logLevel", "", "key logLevel is empty"},
      {"probePort", "http", "key probePort: \"http\" is not a port number (1 to 65535)"},
      {"probePort", "70000", "key probePort: \"70000\" is not a port number"},
      {"httpPort", "0", "key httpPort: \"0\" is not a port number"},
  };
  for (const auto& [key, value, message] : cases) {
    auto data = kChart;
    if (value) {
      data[key] = *value;
    } else {
      data.erase(key);
    }
    const auto parsed = InjectorParams::fromData(data);
    ASSERT_TRUE(std::holds_alternative<std::string>(parsed)) << key;
    EXPECT_EQ(std::get<std::string>(parsed).rfind(message, 0), 0u) << std::get<std::string>(parsed);
  }
}

TEST(ParamsDirectory, ReadsTheKeysAsTheKubeletProjectsThem) {
  testing_support::TemporaryDirectory dir;
  // The kubelet's layout: the files in a timestamped directory, ..data a symlink to it, each
  // key a symlink through ..data.
  for (const auto& [key, value] : kChart) {
    dir.write("..2026_12_07/" + key, value);
  }
  std::filesystem::create_directory_symlink("..2026_12_07", dir.path() / "..data");
  for (const auto& [key, value] : kChart) {
    std::filesystem::create_symlink("..data/" + key, dir.path() / key);
  }
  dir.write("unrelated", "ignored");
  const auto data = ParamsDirectory::read(dir.path());
  ASSERT_TRUE((std::holds_alternative<std::map<std::string, std::string>>(data)));
  EXPECT_EQ((std::get<std::map<std::string, std::string>>(data)), kChart);
}

TEST(ParamsDirectory, NamesAMissingDirectory) {
  const auto data = ParamsDirectory::read("/nonexistent/params");
  ASSERT_TRUE(std::holds_alternative<std::string>(data));
  EXPECT_EQ(std::get<std::string>(data),
            "cannot read /nonexistent/params: No such file or directory");
}

TEST(InjectorFiles, ReportsWhatChangedBetweenReads) {
  testing_support::TemporaryDirectory dir;
  for (const auto& [key, value] : kChart)
    dir.write("params/" + key, value);
  dir.write("tls.crt", "CERT");
  dir.write("tls.key", "KEY");
  InjectorFiles files({(dir.path() / "params").string(), (dir.path() / "tls.crt").string(),
                       (dir.path() / "tls.key").string()});
  auto changes = files.refresh();
  EXPECT_TRUE(changes.params);
  EXPECT_TRUE(changes.certificate);
  EXPECT_EQ(files.certPem(), "CERT");
  changes = files.refresh();
  EXPECT_FALSE(changes.params);
  EXPECT_FALSE(changes.certificate);

  dir.write("params/image", "registry.example.com/leasehold:edited");
  dir.write("tls.key", "KEY2");
  changes = files.refresh();
  EXPECT_TRUE(changes.params);
  EXPECT_TRUE(changes.certificate);
  EXPECT_EQ(std::get<InjectorParams>(files.params()).image,
            "registry.example.com/leasehold:edited");
  EXPECT_EQ(files.keyPem(), "KEY2");

  // A pair the server refused is tried again at the next read.
  files.forgetCertificate();
  EXPECT_TRUE(files.refresh().certificate);

  std::filesystem::remove(dir.path() / "params" / "probePort");
  std::filesystem::remove(dir.path() / "tls.crt");
  changes = files.refresh();
  EXPECT_TRUE(changes.params);
  EXPECT_FALSE(changes.certificate);
  EXPECT_EQ(changes.certificateError, "cannot read " + (dir.path() / "tls.crt").string());
  EXPECT_EQ(std::get<std::string>(files.params()),
            (dir.path() / "params").string() + ": key probePort is missing");
  EXPECT_EQ(files.keyPem(), "KEY2");  // the last good pair stays
}

}  // namespace
}  // namespace leasehold::inject
