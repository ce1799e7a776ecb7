// etcd gateway answers (etcd/EtcdCodec): every decoder on arbitrary bytes, and each line of a
// watch stream. A malformed answer gives false with a message that names what was wrong (never
// an empty one); what decodes keeps etcd's invariants the campaign relies on.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "FuzzCheck.h"
#include "etcd/EtcdCodec.h"

using namespace leasehold::etcd;

namespace {

void checkRefusal(bool ok, const std::string& error, const char* what) {
  FUZZ_CHECK(ok || !error.empty(), std::string(what) + " refused an answer without saying why");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string error;

  Range range;
  const bool rangeOk = decodeRange(text, range, error);
  checkRefusal(rangeOk, error, "decodeRange");
  if (rangeOk) {
    for (const auto& kv : range.kvs) {
      FUZZ_CHECK(kv.createRevision >= 0 && kv.modRevision >= 0, "a negative revision decoded");
    }
  }

  error.clear();
  KeepAlive keepAlive;
  checkRefusal(decodeKeepAlive(text, keepAlive, error), error, "decodeKeepAlive");
  error.clear();
  LeaseGrant grant;
  checkRefusal(decodeLeaseGrant(text, grant, error), error, "decodeLeaseGrant");
  error.clear();
  CreateUnlessExists created;
  const bool createdOk = decodeCreateUnlessExists(text, "e/1", "me", 7, created, error);
  checkRefusal(createdOk, error, "decodeCreateUnlessExists");
  if (createdOk && created.created) {
    FUZZ_CHECK(created.kv.createRevision > 0, "a created key without its create revision");
  }
  error.clear();
  std::string token;
  const bool authOk = decodeAuthenticate(text, token, error);
  checkRefusal(authOk, error, "decodeAuthenticate");
  FUZZ_CHECK(!authOk || !token.empty(), "an empty token decoded");

  // A watch stream: every line on its own.
  std::size_t from = 0;
  while (from <= text.size()) {
    const auto end = std::min(text.find('\n', from), text.size());
    WatchMessage message;
    error.clear();
    checkRefusal(decodeWatchMessage(text.substr(from, end - from), message, error), error,
                 "decodeWatchMessage");
    from = end + 1;
  }
  GatewayError gatewayError;
  decodeGatewayError(text, gatewayError);
  return 0;
}
