// `leasehold copy-self DEST`: the running binary (here the test's own, /proc/self/exe) copied
// to DEST; usage errors exit 2 and I/O errors 1, each with one line naming what was wrong.
#include "install/CopySelfCommand.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "TemporaryDirectory.h"

namespace leasehold::install {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
namespace fs = std::filesystem;

struct Outcome {
  int status;
  std::string out;
  std::string err;
};

Outcome copySelf(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int status = CopySelfCommand::run(args, out, err);
  return {status, out.str(), err.str()};
}

TEST(CopySelfCommandTest, CopiesTheRunningBinary) {
  testing_support::TemporaryDirectory dir;
  const auto dest = dir.path() / "leasehold";
  const auto result = copySelf({dest});
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(result.err, "");
  const std::string self = testing_support::TemporaryDirectory::contents("/proc/self/exe");
  ASSERT_GT(self.size(), 1000u);
  EXPECT_EQ(testing_support::TemporaryDirectory::contents(dest), self);
  struct stat st {};
  ASSERT_EQ(::stat(dest.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
}

TEST(CopySelfCommandTest, DoubleDashLetsDestinationStartWithADash) {
  testing_support::TemporaryDirectory dir;
  const auto previous = fs::current_path();
  fs::current_path(dir.path());
  const auto result = copySelf({"--", "-leasehold"});
  fs::current_path(previous);
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_TRUE(fs::is_regular_file(dir.path() / "-leasehold"));
}

TEST(CopySelfCommandTest, HelpDescribesTheCommandOnStandardOutput) {
  for (const char* flag : {"--help", "-h"}) {
    const auto result = copySelf({flag});
    EXPECT_EQ(result.status, 0);
    EXPECT_THAT(result.out, StartsWith("Usage: leasehold copy-self DEST\n"));
    EXPECT_THAT(result.out, HasSubstr("mode 0755"));
    EXPECT_EQ(result.err, "");
  }
}

TEST(CopySelfCommandTest, UsageErrorsExit2WithOneLine) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{}, "leasehold copy-self: no DEST"},
      {{"a", "b"}, "leasehold copy-self: one DEST only, got 2"},
      {{"--force", "a"}, "leasehold copy-self: unknown option --force"},
      {{""}, "leasehold copy-self: DEST is empty"},
  };
  for (const auto& [args, message] : cases) {
    const auto result = copySelf(args);
    EXPECT_EQ(result.status, 2) << message;
    EXPECT_THAT(result.err, StartsWith(message + " (usage: leasehold copy-self DEST; see "));
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
    EXPECT_EQ(result.out, "");
  }
}

TEST(CopySelfCommandTest, AFailedCopyExits1NamingDestination) {
  testing_support::TemporaryDirectory dir;
  const auto dest = dir.path() / "missing" / "leasehold";
  const auto result = copySelf({dest});
  EXPECT_EQ(result.status, 1);
  EXPECT_EQ(result.err, "leasehold copy-self: cannot create a temporary file in " +
                            dest.parent_path().string() + " for " + dest.string() +
                            ": No such file or directory\n");
  EXPECT_EQ(result.out, "");
}

TEST(CopySelfCommandTest, InvokedOnlyAsTheFirstWord) {
  const char* copy[] = {"leasehold", "copy-self", "/x"};
  const char* run[] = {"leasehold", "run", "--", "copy-self"};
  const char* none[] = {"leasehold"};
  EXPECT_TRUE(CopySelfCommand::invoked(3, copy));
  EXPECT_FALSE(CopySelfCommand::invoked(4, run));
  EXPECT_FALSE(CopySelfCommand::invoked(1, none));
}

}  // namespace
}  // namespace leasehold::install
