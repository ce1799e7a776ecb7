// TLS context (see TlsContext.h).
#include "server/TlsContext.h"

#include <cstring>

namespace apiserver {

namespace ssl = boost::asio::ssl;

std::unique_ptr<ssl::context> make_tls_context(const std::string& cert, const std::string& key) {
  auto tls = std::make_unique<ssl::context>(ssl::context::tls_server);
  tls->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                   ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  tls->use_certificate_chain_file(cert);
  tls->use_private_key_file(key.empty() ? cert : key, ssl::context::pem);
  SSL_CTX_set_alpn_select_cb(
      tls->native_handle(),
      [](SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
         unsigned int inlen, void*) -> int {
        // Only HTTP/1.1 is spoken; refuse h2 so clients fall back.
        for (unsigned i = 0; i + 1 <= inlen;) {
          unsigned len = in[i];
          if (i + 1 + len <= inlen && len == 8 && std::memcmp(in + i + 1, "http/1.1", 8) == 0) {
            *out = in + i + 1;
            *outlen = 8;
            return SSL_TLSEXT_ERR_OK;
          }
          i += 1 + len;
        }
        return SSL_TLSEXT_ERR_NOACK;
      },
      nullptr);
  return tls;
}

}  // namespace apiserver
