#include "cluster/FileTokenSource.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "TemporaryDirectory.h"

namespace leasehold::cluster {
namespace {

using namespace std::chrono_literals;
using testing::HasSubstr;
using testing::Not;

class FileTokenSourceTest : public testing::Test {
 protected:
  std::shared_ptr<FileTokenSource> open() {
    auto source = FileTokenSource::open(path_, [this] { return now_; });
    EXPECT_TRUE(source) << (source ? "" : source.message());
    return source ? *source : nullptr;
  }

  testing_support::TemporaryDirectory dir_;
  std::filesystem::path path_ = dir_.write("token", "first-token\n");
  time::MonoTime now_{1000s};
};

TEST_F(FileTokenSourceTest, ReadsTrimmedToken) {
  auto source = open();
  const auto result = source->token();
  EXPECT_EQ(result.token, "first-token");
  EXPECT_FALSE(result.warning);
  EXPECT_FALSE(result.clientCertificate);
  EXPECT_THAT(source->describe(), HasSubstr(path_.string()));
}

TEST_F(FileTokenSourceTest, RereadsAfterFiftySeconds) {
  auto source = open();
  dir_.write("token", "second-token");
  now_ += 49s;
  EXPECT_EQ(source->token().token, "first-token");
  now_ += 1s;
  EXPECT_EQ(source->token().token, "second-token");
  dir_.write("token", "third-token");
  now_ += 49s;
  EXPECT_EQ(source->token().token, "second-token");  // the clock restarted at the re-read
  now_ += 1s;
  EXPECT_EQ(source->token().token, "third-token");
}

TEST_F(FileTokenSourceTest, InvalidateRereadsAtOnce) {
  auto source = open();
  dir_.write("token", "rotated");
  EXPECT_EQ(source->token().token, "first-token");
  source->invalidate();
  EXPECT_EQ(source->token().token, "rotated");
}

TEST_F(FileTokenSourceTest, EmptyFileKeepsOldTokenAndWarnsOnce) {
  auto source = open();
  dir_.write("token", "");
  now_ += 60s;
  auto result = source->token();
  EXPECT_EQ(result.token, "first-token");
  ASSERT_TRUE(result.warning);
  EXPECT_THAT(*result.warning, HasSubstr(path_.string()));
  EXPECT_THAT(*result.warning, HasSubstr("empty"));
  EXPECT_THAT(*result.warning, Not(HasSubstr("first-token")));

  now_ += 1s;
  result = source->token();
  EXPECT_EQ(result.token, "first-token");
  EXPECT_FALSE(result.warning) << "reported only once";

  // Once the file is good again it is used at the next call (failures are retried), and a
  // later failure is reported again.
  dir_.write("token", "recovered");
  EXPECT_EQ(source->token().token, "recovered");
  dir_.write("token", " \n");
  source->invalidate();
  result = source->token();
  EXPECT_EQ(result.token, "recovered");
  EXPECT_TRUE(result.warning);
}

TEST_F(FileTokenSourceTest, MissingFileKeepsOldToken) {
  auto source = open();
  std::filesystem::remove(path_);
  source->invalidate();
  const auto result = source->token();
  EXPECT_EQ(result.token, "first-token");
  ASSERT_TRUE(result.warning);
  EXPECT_THAT(*result.warning, HasSubstr("No such file"));
}

TEST_F(FileTokenSourceTest, OpenFailsWithoutAUsableToken) {
  dir_.write("empty", "\n");
  auto empty = FileTokenSource::open(dir_.path() / "empty");
  ASSERT_FALSE(empty);
  EXPECT_THAT(empty.message(), HasSubstr("token file is empty"));
  auto missing = FileTokenSource::open(dir_.path() / "missing");
  ASSERT_FALSE(missing);
  EXPECT_THAT(missing.message(), HasSubstr((dir_.path() / "missing").string()));
}

}  // namespace
}  // namespace leasehold::cluster
