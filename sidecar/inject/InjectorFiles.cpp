#include "inject/InjectorFiles.h"

#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <variant>

#include "inject/ParamsDirectory.h"

namespace leasehold::inject {

namespace {

// A certificate file is a few KiB; a chain a few times that.
constexpr std::size_t kMaxPemBytes = 1024 * 1024;

std::optional<std::string> readPem(const std::string& path, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot read " + path;
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    error = "cannot read " + path;
    return std::nullopt;
  }
  std::string pem = std::move(text).str();
  if (pem.size() > kMaxPemBytes) {
    error = path + " is larger than 1 MiB";
    return std::nullopt;
  }
  if (pem.empty()) {
    error = path + " is empty";
    return std::nullopt;
  }
  return pem;
}

bool sameParams(const ParamsState& a, const ParamsState& b) {
  if (a.index() != b.index()) return false;
  if (const auto* problem = std::get_if<std::string>(&a)) return *problem == std::get<1>(b);
  const auto& x = std::get<InjectorParams>(a);
  const auto& y = std::get<InjectorParams>(b);
  return x == y;
}

}  // namespace

InjectorFiles::Changes InjectorFiles::refresh() {
  Changes changes;
  ParamsState params;
  auto data = ParamsDirectory::read(paths_.paramsDir);
  if (auto* problem = std::get_if<std::string>(&data)) {
    params = std::move(*problem);
  } else {
    auto parsed = InjectorParams::fromData(std::get<std::map<std::string, std::string>>(data));
    if (auto* problem = std::get_if<std::string>(&parsed)) {
      params = paths_.paramsDir + ": " + *problem;
    } else {
      params = std::get<InjectorParams>(std::move(parsed));
    }
  }
  changes.params = first_ || !sameParams(params, params_);
  params_ = std::move(params);

  auto cert = readPem(paths_.certFile, changes.certificateError);
  auto key = cert ? readPem(paths_.keyFile, changes.certificateError) : std::nullopt;
  if (cert && key && (*cert != certPem_ || *key != keyPem_)) {
    certPem_ = std::move(*cert);
    keyPem_ = std::move(*key);
    changes.certificate = true;
  }
  first_ = false;
  return changes;
}

}  // namespace leasehold::inject
