#pragma once
// Runs one ordinary request to completion on the test's io_context.
#include <gtest/gtest.h>

#include <optional>

#include "EventLoop.h"
#include "net/HttpsClient.h"

namespace leasehold::net::test {

inline HttpsClient::Request get(std::string target) {
  HttpsClient::Request request;
  request.target = std::move(target);
  return request;
}

inline std::optional<HttpsClient::Result> fetch(boost::asio::io_context& io, HttpsClient& client,
                                                HttpsClient::Request request) {
  std::optional<HttpsClient::Result> result;
  client.request(std::move(request), [&](HttpsClient::Result r) { result = std::move(r); });
  runUntil(io, [&] { return result.has_value(); });
  return result;
}

// The request was answered, with the failure `kind`.
inline ::testing::AssertionResult failedWith(const std::optional<HttpsClient::Result>& result,
                                             HttpsClient::Error::Kind kind) {
  if (!result) return ::testing::AssertionFailure() << "no answer";
  if (result->ok()) return ::testing::AssertionFailure() << "succeeded";
  if (result->error().kind != kind) {
    return ::testing::AssertionFailure()
           << HttpsClient::kindName(result->error().kind) << ": " << result->error().message;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace leasehold::net::test
