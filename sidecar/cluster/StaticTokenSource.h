#pragma once
// A token written directly into the kubeconfig (users[].user.token). It cannot be refreshed, so
// invalidate() has nothing to do.
#include <string>

#include "cluster/TokenSource.h"

namespace leasehold::cluster {

class StaticTokenSource : public TokenSource {
 public:
  StaticTokenSource(std::string token, std::string description)
      : token_(std::move(token)), description_(std::move(description)) {}

  TokenResult token() override { return TokenResult{token_, std::nullopt, nullptr}; }
  void invalidate() override {}
  std::string describe() const override { return description_; }

 private:
  std::string token_;
  std::string description_;
};

}  // namespace leasehold::cluster
