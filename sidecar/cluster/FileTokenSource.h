#pragma once
// A token read from a file and re-read while the process runs: the in-cluster service-account
// token (projected, rotated by the kubelet at 80% of its life) or a kubeconfig tokenFile.
//
// Like client-go: the cached copy is re-read when it is older than kMaxAge and at once after
// invalidate() (a 401); a failed read or an empty file keeps the old token, because the old one
// usually still works for a while and failing every request would be worse.
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "cluster/RestConfigResult.h"
#include "cluster/TokenSource.h"
#include "time/Time.h"

namespace leasehold::cluster {

class FileTokenSource : public TokenSource {
 public:
  using MonoClock = std::function<time::MonoTime()>;

  static constexpr time::Duration kMaxAge = std::chrono::seconds(50);

  // Reads the file once; a missing, unreadable or empty file is an error here (there is no old
  // token to fall back on yet). An empty `clock` means BootClock::now.
  static LoadResult<std::shared_ptr<FileTokenSource>> open(std::filesystem::path path,
                                                           MonoClock clock = time::BootClock::now);

  TokenResult token() override;
  void invalidate() override { stale_ = true; }
  std::string describe() const override { return "token file " + path_.string(); }

 private:
  FileTokenSource(std::filesystem::path path, MonoClock clock, std::string token,
                  time::MonoTime readAt);

  // The token in the file, trimmed; or an error message that names the file only.
  static LoadResult<std::string> readToken(const std::filesystem::path& path);

  std::filesystem::path path_;
  MonoClock clock_;
  std::string token_;
  time::MonoTime readAt_;
  bool stale_ = false;
  // A failure is reported once; the next successful read re-arms the report.
  bool failureReported_ = false;
};

}  // namespace leasehold::cluster
