// copyExecutable: a whole copy with mode 0755 over any old DEST, or an error naming DEST (or
// the source) that leaves DEST as it was and no temporary file behind.
#include "install/ExecutableCopy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include "TemporaryDirectory.h"

namespace leasehold::install {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
namespace fs = std::filesystem;

using testing_support::TemporaryDirectory;

TEST(ExecutableCopyTest, CopiesTheBytesWithMode0755AndNothingElse) {
  testing_support::TemporaryDirectory dir;
  const auto source = dir.write("source", std::string(200000, 'x') + "end");
  ::chmod(source.c_str(), 0600);
  const auto dest = dir.path() / "bin" / "leasehold";
  fs::create_directory(dest.parent_path());
  EXPECT_EQ(copyExecutable(source, dest), "");
  EXPECT_EQ(testing_support::TemporaryDirectory::contents(dest),
            testing_support::TemporaryDirectory::contents(source));
  EXPECT_EQ(TemporaryDirectory::mode(dest), 0755);
  EXPECT_EQ(TemporaryDirectory::entriesOf(dest.parent_path()),
            std::vector<std::string>{"leasehold"});
}

TEST(ExecutableCopyTest, ReplacesAnExistingDestination) {
  testing_support::TemporaryDirectory dir;
  const auto source = dir.write("source", "new binary");
  const auto dest = dir.write("leasehold", "an older, longer binary");
  ::chmod(dest.c_str(), 0644);
  EXPECT_EQ(copyExecutable(source, dest), "");
  EXPECT_EQ(testing_support::TemporaryDirectory::contents(dest), "new binary");
  EXPECT_EQ(TemporaryDirectory::mode(dest), 0755);
  EXPECT_EQ(TemporaryDirectory::entriesOf(dir.path()),
            (std::vector<std::string>{"leasehold", "source"}));
}

TEST(ExecutableCopyTest, ARelativeDestinationIsInTheWorkingDirectory) {
  testing_support::TemporaryDirectory dir;
  const auto source = dir.write("source", "binary");
  const auto previous = fs::current_path();
  fs::current_path(dir.path());
  const auto error = copyExecutable(source, "copied");
  fs::current_path(previous);
  EXPECT_EQ(error, "");
  EXPECT_EQ(testing_support::TemporaryDirectory::contents(dir.path() / "copied"), "binary");
}

TEST(ExecutableCopyTest, AMissingDirectoryNamesDestination) {
  testing_support::TemporaryDirectory dir;
  const auto source = dir.write("source", "binary");
  const auto dest = dir.path() / "missing" / "leasehold";
  EXPECT_EQ(copyExecutable(source, dest), "cannot create a temporary file in " +
                                              dest.parent_path().string() + " for " +
                                              dest.string() + ": No such file or directory");
  EXPECT_FALSE(fs::exists(dest.parent_path()));
}

TEST(ExecutableCopyTest, ADirectoryAsDestinationIsRefusedNotCopiedInto) {
  testing_support::TemporaryDirectory dir;
  const auto source = dir.write("source", "binary");
  const auto target = dir.path() / "bin";
  fs::create_directory(target);
  EXPECT_THAT(copyExecutable(source, target),
              StartsWith(target.string() + ": a directory; give the file's path"));
  EXPECT_THAT(copyExecutable(source, target.string() + "/"), HasSubstr("a directory"));
  EXPECT_TRUE(fs::is_empty(target));
}

TEST(ExecutableCopyTest, AnUnreadableSourceNamesItAndLeavesDestinationAlone) {
  testing_support::TemporaryDirectory dir;
  const auto dest = dir.write("leasehold", "old");
  const auto source = dir.path() / "no-such-source";
  EXPECT_EQ(copyExecutable(source, dest),
            "cannot read " + source.string() + ": No such file or directory");
  EXPECT_EQ(testing_support::TemporaryDirectory::contents(dest), "old");
}

TEST(ExecutableCopyTest, AReadFailingHalfWayLeavesDestinationAndNoTemporaryFile) {
  // A directory opens for reading, and its read() fails (EISDIR) after the temporary file
  // exists: the failure the rename protects against.
  testing_support::TemporaryDirectory dir;
  const auto source = dir.path() / "a-directory";
  fs::create_directory(source);
  const auto dest = dir.write("leasehold", "old");
  EXPECT_EQ(copyExecutable(source, dest), "cannot read " + source.string() + ": Is a directory");
  EXPECT_EQ(testing_support::TemporaryDirectory::contents(dest), "old");
  EXPECT_EQ(TemporaryDirectory::entriesOf(dir.path()),
            (std::vector<std::string>{"a-directory", "leasehold"}));
}

}  // namespace
}  // namespace leasehold::install
