#include "cluster/FileTokenSource.h"

#include "cluster/RestConfigFileReader.h"

namespace leasehold::cluster {

namespace {

// Token files written by hand often end in a newline; the kubelet's do not. Either way
// whitespace is never part of a bearer token.
std::string trimmed(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return {};
  const auto last = s.find_last_not_of(" \t\r\n");
  return s.substr(first, last - first + 1);
}

}  // namespace

LoadResult<std::string> FileTokenSource::readToken(const std::filesystem::path& path) {
  auto content = RestConfigFileReader::read(path);
  if (!content) return content.error();
  std::string token = trimmed(*content);
  if (token.empty()) return LoadError{path.string() + ": token file is empty"};
  return token;
}

LoadResult<std::shared_ptr<FileTokenSource>> FileTokenSource::open(std::filesystem::path path,
                                                                   MonoClock clock) {
  if (!clock) clock = time::BootClock::now;
  auto token = readToken(path);
  if (!token) return token.error();
  const auto now = clock();
  return std::shared_ptr<FileTokenSource>(
      new FileTokenSource(std::move(path), std::move(clock), std::move(token).value(), now));
}

FileTokenSource::FileTokenSource(std::filesystem::path path, MonoClock clock, std::string token,
                                 time::MonoTime readAt)
    : path_(std::move(path)), clock_(std::move(clock)), token_(std::move(token)), readAt_(readAt) {}

TokenResult FileTokenSource::token() {
  TokenResult result;
  const auto now = clock_();
  if (stale_ || now - readAt_ >= kMaxAge) {
    auto fresh = readToken(path_);
    if (fresh) {
      token_ = std::move(fresh).value();
      readAt_ = now;
      stale_ = false;
      failureReported_ = false;
    } else if (!failureReported_) {
      // readAt_ stays old, so the next request tries again; the file is tiny.
      failureReported_ = true;
      result.warning = fresh.message() + "; still using the token read before";
    }
  }
  result.token = token_;
  return result;
}

}  // namespace leasehold::cluster
