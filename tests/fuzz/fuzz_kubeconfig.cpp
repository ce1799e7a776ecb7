// kubeconfig YAML: cluster::KubeconfigFile::parse (the string entry point KubeconfigFile::read
// uses) on arbitrary bytes, then what the loader does next without touching the file system or
// running plugins: merging (also a file with itself) and base64-decoding the *-data fields.
//
// Properties: a parsed file names every entry; every message names the kubeconfig; base64 that
// decodes re-encodes to something that decodes to the same bytes.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "FuzzCheck.h"
#include "cluster/Kubeconfig.h"
#include "cluster/KubeconfigFile.h"
#include "net/Base64.h"

using namespace leasehold;

namespace {

void checkBase64(const std::optional<cluster::KubeconfigValue<std::string>>& data) {
  if (!data) return;
  FUZZ_CHECK(data->location.describe().starts_with("kubeconfig /fuzz/config"),
             "a location that does not name the file: " + data->location.describe());
  const auto decoded = net::Base64::decode(data->value);
  if (!decoded) return;
  const std::string encoded = net::Base64::encode(*decoded);
  const auto again = net::Base64::decode(encoded);
  FUZZ_CHECK(again && *again == *decoded, "base64 round trip changed the bytes of " +
                                              data->location.keyPath + " (re-encoded: " + encoded +
                                              ")");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = cluster::KubeconfigFile::parse(text, "/fuzz/config");
  if (!parsed) {
    FUZZ_CHECK(parsed.message().starts_with("kubeconfig /fuzz/config"),
               "an error that does not name the file: " + parsed.message());
    return 0;
  }
  const cluster::KubeconfigFile& file = *parsed;
  for (const auto& cluster : file.clusters) {
    FUZZ_CHECK(!cluster.name.empty(), "a cluster without a name");
    checkBase64(cluster.certificateAuthorityData);
  }
  for (const auto& user : file.users) {
    FUZZ_CHECK(!user.name.empty(), "a user without a name");
    checkBase64(user.clientCertificateData);
    checkBase64(user.clientKeyData);
    if (user.exec) FUZZ_CHECK(!user.exec->command.value.empty(), "an exec plugin without command");
  }
  for (const auto& context : file.contexts)
    FUZZ_CHECK(!context.name.empty(), "a context without a name");

  std::vector<cluster::KubeconfigFile> files{file, file};
  files[1].path = "/fuzz/second";
  const auto merged = cluster::Kubeconfig::merge(std::move(files));
  if (file.currentContext) {
    FUZZ_CHECK(
        merged.currentContext() && merged.currentContext()->value == file.currentContext->value,
        "merge lost current-context");
  }
  return 0;
}
