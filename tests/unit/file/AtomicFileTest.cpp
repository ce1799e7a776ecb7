// AtomicFile: the mode it is given whatever the umask, a copy from a descriptor, a failure that
// leaves the target as it was with no temporary file behind, and errors naming the directory.
// StatusFileTest (readers never see a partial file) and ExecutableCopyTest cover the callers.
#include "file/AtomicFile.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "TemporaryDirectory.h"
#include "file/FileDescriptor.h"

namespace leasehold::file {
namespace {

namespace fs = std::filesystem;

class AtomicFileModeTest : public ::testing::TestWithParam<mode_t> {
 protected:
  testing_support::TemporaryDirectory dir_;
};

TEST_P(AtomicFileModeTest, TheModeIsTheOneGivenWhateverTheUmask) {
  const mode_t old = ::umask(0077);
  AtomicFile file((dir_.path() / "f").string(), GetParam());
  const auto problem = file.replace("x");
  ::umask(old);
  ASSERT_EQ(problem, std::nullopt);
  EXPECT_EQ(testing_support::TemporaryDirectory::mode(dir_.path() / "f"),
            static_cast<int>(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Modes, AtomicFileModeTest, ::testing::Values(0644, 0755, 0600));

TEST(AtomicFile, AFailedCopyLeavesTheOldContentAndNoTemporaryFile) {
  testing_support::TemporaryDirectory dir;
  const auto target = dir.write("leader.json", "old\n");
  // A directory opens for reading and its read() fails (EISDIR) after the temporary file was
  // made: the failure comes half-way.
  FileDescriptor source(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(source.valid());
  EXPECT_EQ(AtomicFile(target.string(), 0644).replaceWithCopyOf(source.get(), "SRC"),
            "cannot read SRC: Is a directory");
  EXPECT_EQ(testing_support::TemporaryDirectory::contents(target), "old\n");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"leader.json"});
}

TEST(AtomicFile, ACopyTakesEverythingUpToTheSourcesEnd) {
  testing_support::TemporaryDirectory dir;
  const std::string bytes = std::string(3 * 65536 + 17, 'y') + "end";
  const auto source = dir.write("source", bytes);
  FileDescriptor in(::open(source.c_str(), O_RDONLY | O_CLOEXEC));
  const auto target = dir.path() / "copy";
  ASSERT_EQ(AtomicFile(target.string(), 0755).replaceWithCopyOf(in.get(), source), std::nullopt);
  EXPECT_EQ(testing_support::TemporaryDirectory::contents(target), bytes);
}

TEST(AtomicFile, AMissingDirectoryIsNamedInTheError) {
  testing_support::TemporaryDirectory dir;
  const auto target = dir.path() / "absent" / "leader.json";
  EXPECT_EQ(AtomicFile(target.string(), 0644).replace("x"),
            "cannot create a temporary file in " + (dir.path() / "absent").string() + " for " +
                target.string() + ": No such file or directory");
}

TEST(AtomicFile, APathWithoutASlashIsInTheWorkingDirectory) {
  EXPECT_EQ(AtomicFile("leader.json", 0644).directory(), ".");
  EXPECT_EQ(AtomicFile("/leader.json", 0644).directory(), "/");
  EXPECT_EQ(AtomicFile("/a/b/leader.json", 0644).directory(), "/a/b");
}

}  // namespace
}  // namespace leasehold::file
