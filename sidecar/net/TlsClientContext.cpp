#include "net/TlsClientContext.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <boost/asio/buffer.hpp>

namespace leasehold::net {
namespace {

namespace ssl = boost::asio::ssl;

bool isIpLiteral(const std::string& host) {
  in6_addr v6{};
  in_addr v4{};
  return inet_pton(AF_INET, host.c_str(), &v4) == 1 || inet_pton(AF_INET6, host.c_str(), &v6) == 1;
}

std::string openSslError(const boost::system::error_code& ec) {
  return ec.message();
}

}  // namespace

std::variant<std::shared_ptr<ssl::context>, std::string> TlsClientContext::create(
    const TlsOptions& options) {
  if (options.insecureSkipVerify && !options.caPem.empty()) {
    return std::string("a CA certificate together with insecure-skip-tls-verify is not allowed");
  }
  auto context = std::make_shared<ssl::context>(ssl::context::tls_client);
  SSL_CTX* native = context->native_handle();
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  context->set_options(ssl::context::default_workarounds | ssl::context::no_compression);

  boost::system::error_code ec;
  if (options.insecureSkipVerify) {
    context->set_verify_mode(ssl::verify_none);
  } else {
    context->set_verify_mode(ssl::verify_peer);
    if (!options.caPem.empty()) {
      context->add_certificate_authority(boost::asio::buffer(options.caPem), ec);
      if (ec) return "cannot load CA certificate: " + openSslError(ec);
    } else {
      context->set_default_verify_paths(ec);
      if (ec) return "cannot load system CA certificates: " + openSslError(ec);
    }
  }
  if (options.clientCertPem.empty() != options.clientKeyPem.empty()) {
    return std::string("client certificate and client key must be given together");
  }
  if (!options.clientCertPem.empty()) {
    context->use_certificate_chain(boost::asio::buffer(options.clientCertPem), ec);
    if (ec) return "cannot load client certificate: " + openSslError(ec);
    context->use_private_key(boost::asio::buffer(options.clientKeyPem), ssl::context::pem, ec);
    if (ec) return "cannot load client key: " + openSslError(ec);
    if (SSL_CTX_check_private_key(native) != 1) {
      return std::string("client key does not match the client certificate");
    }
  }
  return context;
}

std::optional<std::string> TlsClientContext::prepareSession(SSL* ssl, const TlsOptions& options,
                                                            const std::string& urlHost) {
  const std::string& name = options.serverName.empty() ? urlHost : options.serverName;
  const bool ip = isIpLiteral(name);
  // RFC 6066: literal IP addresses are not permitted in SNI.
  if (!ip && SSL_set_tlsext_host_name(ssl, name.c_str()) != 1) {
    return "cannot set TLS server name \"" + name + "\"";
  }
  if (options.insecureSkipVerify) return std::nullopt;
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  if (ip) {
    if (X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str()) != 1) {
      return "cannot verify against IP address \"" + name + "\"";
    }
  } else {
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    if (X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size()) != 1) {
      return "cannot verify against host name \"" + name + "\"";
    }
  }
  return std::nullopt;
}

std::string TlsClientContext::describeHandshakeFailure(SSL* ssl, const std::string& fallback) {
  const long verify = SSL_get_verify_result(ssl);
  if (verify != X509_V_OK) {
    return std::string("certificate verification failed: ") + X509_verify_cert_error_string(verify);
  }
  return fallback;
}

}  // namespace leasehold::net
