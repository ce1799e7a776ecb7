#include "runtime/WatchTimeoutHook.h"

#include <gtest/gtest.h>

namespace leasehold::runtime {
namespace {

struct HookCase {
  const char* name;
  const char* value;
  const char* hooks;
  std::optional<int> seconds;
  const char* messageHas;  // "" = no message at all
};

class WatchTimeoutHookTest : public ::testing::TestWithParam<HookCase> {};

TEST_P(WatchTimeoutHookTest, ReadsOnlyAValidValueWithTheHooksEnabled) {
  const HookCase& c = GetParam();
  const WatchTimeoutHook hook = parseWatchTimeoutHook(c.value, c.hooks);
  EXPECT_EQ(hook.seconds, c.seconds);
  if (*c.messageHas == '\0') {
    EXPECT_EQ(hook.message, "");
  } else {
    EXPECT_NE(hook.message.find(c.messageHas), std::string::npos) << hook.message;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, WatchTimeoutHookTest,
    ::testing::Values(
        HookCase{"unset", nullptr, "1", std::nullopt, ""},
        HookCase{"empty", "", "1", std::nullopt, ""},
        HookCase{"without_hooks", "5", nullptr, std::nullopt, "needs LEASEHOLD_TEST_HOOKS=1"},
        HookCase{"hooks_not_one", "5", "yes", std::nullopt, "needs LEASEHOLD_TEST_HOOKS=1"},
        HookCase{"active", "5", "1", 5, "TEST HOOK ACTIVE"},
        HookCase{"lowest", "1", "1", 1, "watches end after 1-2 s"},
        HookCase{"highest", "3600", "1", 3600, "TEST HOOK ACTIVE"},
        HookCase{"zero", "0", "1", std::nullopt, "not a whole number of seconds in [1, 3600]"},
        HookCase{"too_big", "3601", "1", std::nullopt, "in [1, 3600]"},
        HookCase{"negative", "-3", "1", std::nullopt, "in [1, 3600]"},
        HookCase{"fraction", "1.5", "1", std::nullopt, "in [1, 3600]"},
        HookCase{"trailing_text", "5s", "1", std::nullopt, "in [1, 3600]"},
        HookCase{"overflow", "99999999999999999999", "1", std::nullopt, "in [1, 3600]"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace leasehold::runtime
