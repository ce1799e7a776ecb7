// refusalHint: each refusal the sidecar can meet, and the words the operator needs in the log.
#include "kube/RefusalHint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace leasehold::kube {
namespace {

using ::testing::HasSubstr;

struct Case {
  Connection connection;
  std::string verb;
  int code;
  std::string says;  // "" : no hint at all
};

class RefusalHintTest : public ::testing::TestWithParam<Case> {};

TEST_P(RefusalHintTest, NamesWhatToFix) {
  const Case& c = GetParam();
  const std::string hint = refusalHint(c.connection, c.verb, c.code);
  if (c.says.empty()) {
    EXPECT_EQ(hint, "");
  } else {
    EXPECT_THAT(hint, HasSubstr(c.says));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Refusals, RefusalHintTest,
    ::testing::Values(Case{Connection::kLease, "create", 403,
                           "the Lease does not exist and this ServiceAccount may not create it"},
                      Case{Connection::kLease, "update", 403,
                           "may not update the Lease: the Role's resourceNames"},
                      Case{Connection::kLease, "watch", 403, "may not watch the Lease"},
                      Case{Connection::kSide, "create", 403, "lack a permission (RBAC)"},
                      Case{Connection::kSide, "patch", 403, "lack a permission (RBAC)"},
                      Case{Connection::kLease, "get", 401, "not accepted"},
                      Case{Connection::kSide, "create", 401, "not accepted"},
                      Case{Connection::kLease, "create", 409, ""},
                      Case{Connection::kLease, "get", 200, ""}));

}  // namespace
}  // namespace leasehold::kube
