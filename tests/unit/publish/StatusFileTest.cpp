#include "publish/StatusFile.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "TemporaryDirectory.h"
#include "election/Leadership.h"
#include "kube/LeaseLockName.h"
#include "publish/LeadershipJson.h"

namespace leasehold::publish {
namespace {

namespace fs = std::filesystem;

class StatusFileTest : public ::testing::Test {
 protected:
  static std::string read(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_))
      names.push_back(e.path().filename().string());
    return names;
  }

  testing_support::TemporaryDirectory tmp_;
  const fs::path dir_ = tmp_.path();
};

TEST_F(StatusFileTest, WritesTheContentAndLeavesNoTempFileBehind) {
  StatusFile file((dir_ / "leader.json").string());
  ASSERT_EQ(file.write("{\"leader\":true}\n"), std::nullopt);
  EXPECT_EQ(read(dir_ / "leader.json"), "{\"leader\":true}\n");
  EXPECT_EQ(entries(), std::vector<std::string>{"leader.json"});
  struct stat st {};
  ASSERT_EQ(::stat((dir_ / "leader.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

TEST_F(StatusFileTest, ReplacesByRenameSoAnOpenReaderKeepsTheOldContent) {
  StatusFile file((dir_ / "leader.json").string());
  ASSERT_EQ(file.write("first, and longer than the second\n"), std::nullopt);
  std::ifstream before(dir_ / "leader.json");  // a reader that opened the old file
  struct stat oldStat {};
  ASSERT_EQ(::stat((dir_ / "leader.json").c_str(), &oldStat), 0);

  ASSERT_EQ(file.write("second\n"), std::nullopt);
  struct stat newStat {};
  ASSERT_EQ(::stat((dir_ / "leader.json").c_str(), &newStat), 0);
  EXPECT_NE(oldStat.st_ino, newStat.st_ino) << "a new inode: rename, not an in-place rewrite";
  std::stringstream old;
  old << before.rdbuf();
  EXPECT_EQ(old.str(), "first, and longer than the second\n");
  EXPECT_EQ(read(dir_ / "leader.json"), "second\n");
  EXPECT_EQ(entries().size(), 1u);
}

TEST_F(StatusFileTest, AConcurrentReaderNeverSeesAPartialOrEmptyFile) {
  const fs::path path = dir_ / "leader.json";
  StatusFile file(path.string());
  const std::string a = "{\"leader\":true,\"pad\":\"" + std::string(3000, 'a') + "\"}\n";
  const std::string b = "{\"leader\":false,\"pad\":\"" + std::string(100, 'b') + "\"}\n";
  ASSERT_EQ(file.write(a), std::nullopt);
  std::atomic<bool> done{false};
  std::atomic<int> reads{0}, bad{0};
  std::thread reader([&] {
    while (!done) {
      const std::string s = read(path);
      if (s != a && s != b) bad++;
      reads++;
    }
  });
  for (int i = 0; i < 100; i++)
    ASSERT_EQ(file.write(i % 2 ? a : b), std::nullopt);
  done = true;
  reader.join();
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(bad.load(), 0);
}

TEST_F(StatusFileTest, LeaderFalseRewriteOnShutdownDropsValidUntil) {
  const fs::path path = dir_ / "leader.json";
  StatusFile file(path.string());
  election::Leadership l;
  l.leader = true;
  l.identity = l.holder = "me";
  l.fencingToken = 3;
  l.validUntil = time::WallTime(std::chrono::microseconds(5'000'000));
  ASSERT_EQ(file.write(leadershipJson(l, kube::leaseLockName("default", "demo")) + "\n"),
            std::nullopt);
  auto j = nlohmann::json::parse(read(path));
  EXPECT_TRUE(j["leader"].get<bool>());
  EXPECT_TRUE(j.contains("validUntil"));

  l.leader = false;  // what Elector::leadership() says once stopped
  ASSERT_EQ(file.write(leadershipJson(l, kube::leaseLockName("default", "demo")) + "\n"),
            std::nullopt);
  j = nlohmann::json::parse(read(path));
  EXPECT_FALSE(j["leader"].get<bool>());
  EXPECT_FALSE(j.contains("validUntil"));
  EXPECT_EQ(j["fencingToken"], 3);
}

TEST_F(StatusFileTest, ARelativePathWorksInTheCurrentDirectory) {
  const fs::path cwd = fs::current_path();
  fs::current_path(dir_);
  StatusFile file("status.json");
  const auto problem = file.write("x\n");
  fs::current_path(cwd);
  ASSERT_EQ(problem, std::nullopt);
  EXPECT_EQ(read(dir_ / "status.json"), "x\n");
}

TEST_F(StatusFileTest, FailuresAreReportedAndKeepThePreviousContent) {
  StatusFile missing((dir_ / "no-such-dir" / "leader.json").string());
  const auto problem = missing.write("x");
  ASSERT_TRUE(problem.has_value());
  EXPECT_NE(problem->find("no-such-dir"), std::string::npos) << *problem;

  // The target is a non-empty directory: the rename fails, the temp file must go away.
  fs::create_directories(dir_ / "taken" / "child");
  StatusFile taken((dir_ / "taken").string());
  const auto renameProblem = taken.write("x");
  ASSERT_TRUE(renameProblem.has_value());
  EXPECT_NE(renameProblem->find("rename"), std::string::npos) << *renameProblem;
  for (const auto& name : entries())
    EXPECT_EQ(name.find(".tmp"), std::string::npos) << name;
  EXPECT_TRUE(fs::is_directory(dir_ / "taken" / "child"));
}

}  // namespace
}  // namespace leasehold::publish
