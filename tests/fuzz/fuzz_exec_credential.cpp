// Exec credential plugins' stdout (client.authentication.k8s.io ExecCredential):
// cluster::ExecCredential::parse and parseRfc3339 on arbitrary bytes.
//
// Properties: messages never depend on (so never quote) the token or the key, which could end up
// in logs; a credential that parses has a token or a certificate/key pair; an expiry parses back
// from its MicroTime form to the same instant.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "FuzzCheck.h"
#include "cluster/ExecCredential.h"

#include <nlohmann/json.hpp>

using namespace leasehold;

namespace {

const std::string kOrigin = "exec plugin \"fuzz\"";

// The same document with non-empty token and clientKeyData replaced by other non-empty values;
// none when there is nothing to replace.
std::optional<std::string> withOtherSecrets(std::string_view text) {
  auto doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return std::nullopt;
  const auto status = doc.find("status");
  if (status == doc.end() || !status->is_object()) return std::nullopt;
  bool replaced = false;
  for (const char* key : {"token", "clientKeyData"}) {
    const auto it = status->find(key);
    if (it == status->end() || !it->is_string() || it->get_ref<const std::string&>().empty()) {
      continue;
    }
    *it = std::string("other-") + key + "-" + it->get<std::string>() + "-other";
    replaced = true;
  }
  if (!replaced) return std::nullopt;
  return doc.dump();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const auto apiVersion :
       {cluster::ExecCredential::kApiVersionV1, cluster::ExecCredential::kApiVersionV1Beta1}) {
    const auto credential = cluster::ExecCredential::parse(text, apiVersion, kOrigin);
    if (!credential) {
      FUZZ_CHECK(credential.message().starts_with(kOrigin),
                 "a message that does not name the plugin: " + credential.message());
      // Messages never depend on the secrets (so they cannot quote them).
      if (const auto other = withOtherSecrets(text)) {
        const auto otherCredential = cluster::ExecCredential::parse(*other, apiVersion, kOrigin);
        FUZZ_CHECK(!otherCredential && otherCredential.message() == credential.message(),
                   "the outcome depends on the token or key:\n" + credential.message() + "\n" +
                       (otherCredential ? std::string("(accepted)") : otherCredential.message()));
      }
      continue;
    }
    FUZZ_CHECK(
        credential->token ? !credential->token->empty() : !credential->clientCertificatePem.empty(),
        "a credential with neither token nor certificate");
    FUZZ_CHECK(credential->clientCertificatePem.empty() == credential->clientKeyPem.empty(),
               "a certificate without key or a key without certificate");
  }

  if (size <= 64) {
    if (const auto time = cluster::ExecCredential::parseRfc3339(text)) {
      using namespace std::chrono;
      const auto year = year_month_day{floor<days>(*time)}.year();
      if (year >= std::chrono::year(0) && year <= std::chrono::year(9999)) {
        const std::string formatted = time::formatMicroTime(*time);
        const auto again = cluster::ExecCredential::parseRfc3339(formatted);
        FUZZ_CHECK(again && *again == *time, "\"" + std::string(text) + "\" formats as \"" +
                                                 formatted + "\", which parses differently");
      }
    }
  }
  return 0;
}
