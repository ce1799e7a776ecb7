// HTTP/1.1 as the real server writes it (Go's net/http): the header order, Audit-Id,
// Content-Length under 2048 bytes and chunked above, chunk framing; and Beast requests to the
// networking-free HttpRequest.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <boost/beast/http.hpp>

#include "http/HttpMessage.h"

namespace apiserver {

constexpr size_t kMaxBody = 4u << 20;     // request bodies (then 413)
constexpr size_t kMaxHeader = 64u << 10;  // request headers (then 400)

std::string http_date();                   // the Date header's value, now
std::string chunk(std::string_view data);  // one chunk of a chunked body
std::string serialize(const HttpResponse& r, bool keep_alive, bool head);
HttpRequest convert(const boost::beast::http::request<boost::beast::http::string_body>& m,
                    const std::string& local);  // header names lower-cased

}  // namespace apiserver
