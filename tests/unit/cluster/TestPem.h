#pragma once
// Not real certificates: the loader only checks for a PEM block; TLS is the HTTP client's job.
#include <string>

namespace leasehold::testing_support {

inline const std::string kCaPem =
    "-----BEGIN CERTIFICATE-----\nQ0EgZm9yIHRlc3Rz\n-----END CERTIFICATE-----\n";
inline const std::string kClientCertPem =
    "-----BEGIN CERTIFICATE-----\nY2xpZW50IGNlcnQ=\n-----END CERTIFICATE-----\n";
inline const std::string kClientKeyPem =
    "-----BEGIN PRIVATE KEY-----\nY2xpZW50IGtleQ==\n-----END PRIVATE KEY-----\n";

}  // namespace leasehold::testing_support
