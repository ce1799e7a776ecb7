// The API's TLS: TLS 1.2 and up, the certificate chain and key from PEM files, and ALPN that
// selects http/1.1 only (the server speaks no h2, so clients such as kubectl fall back).
#pragma once

#include <memory>
#include <string>

#include <boost/asio/ssl.hpp>

namespace apiserver {

// Throws on unreadable or mismatched files. An empty `key` means the key is in `cert`.
std::unique_ptr<boost::asio::ssl::context> make_tls_context(const std::string& cert,
                                                            const std::string& key);

}  // namespace apiserver
