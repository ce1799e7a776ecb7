// config YAML (--config): config::ConfigFile::parse on arbitrary bytes, then the whole
// ConfigLoader on the same bytes as the --config file (no flags, no environment), which checks
// every key and value (durations, names, addresses, choices).
//
// Properties: a file that parses has unique keys with line numbers; a Config that loads prints
// (--print-config, documented as usable as a config file) to YAML that loads back to the same
// Config.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <variant>

#include "FuzzCheck.h"
#include "config/ConfigFile.h"
#include "config/ConfigLoader.h"
#include "config/ConfigPrinter.h"

using namespace leasehold;

namespace {

// An in-memory file the loader can open by path: no disk, nothing left behind.
class MemoryFile {
 public:
  MemoryFile() : fd_(memfd_create("leasehold-fuzz-config", 0)) {
    if (fd_ < 0) fuzz::propertyFailed(__FILE__, __LINE__, "memfd_create", "");
  }
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }
  void write(std::string_view content) {
    if (ftruncate(fd_, 0) != 0 ||
        pwrite(fd_, content.data(), content.size(), 0) != static_cast<ssize_t>(content.size())) {
      fuzz::propertyFailed(__FILE__, __LINE__, "writing the memfd", "");
    }
  }

 private:
  int fd_;
};

config::ConfigOutcome load(MemoryFile& file, std::string_view content) {
  file.write(content);
  const config::ConfigLoader loader(
      {}, config::ConfigLoader::IdentitySources{[] { return std::string("fuzz-host"); },
                                                [] { return std::uint32_t{0x3f9a1c2b}; }});
  return loader.load({"--config", file.path()});
}

bool sameConfig(const config::Config& a, const config::Config& b) {
  return a.leaseName == b.leaseName && a.leaseNamespace == b.leaseNamespace &&
         a.identity == b.identity && a.timings.leaseDuration == b.timings.leaseDuration &&
         a.timings.renewDeadline == b.timings.renewDeadline &&
         a.timings.retryPeriod == b.timings.retryPeriod && a.timings.jitter == b.timings.jitter &&
         a.releaseCooldown == b.releaseCooldown && a.kubeconfig == b.kubeconfig &&
         a.context == b.context && a.httpAddress == b.httpAddress &&
         a.probeAddress == b.probeAddress && a.statusFile == b.statusFile &&
         a.podLabel == b.podLabel && a.logFormat == b.logFormat && a.logLevel == b.logLevel &&
         a.followerMode == b.followerMode;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto parsed = config::ConfigFile::parse(text, "/fuzz/leasehold.yaml");
  if (const auto* error = std::get_if<config::ConfigError>(&parsed)) {
    FUZZ_CHECK(error->message.starts_with("config /fuzz/leasehold.yaml:"),
               "an error that does not name the file: " + error->message);
    return 0;
  }
  std::set<std::string> keys;
  for (const auto& entry : std::get<config::ConfigFile>(parsed).entries()) {
    FUZZ_CHECK(keys.insert(entry.key).second, "key \"" + entry.key + "\" listed twice");
    FUZZ_CHECK(entry.line >= 1, "key \"" + entry.key + "\" without a line number");
  }

  static MemoryFile file;
  const auto outcome = load(file, text);
  const auto* config = std::get_if<config::Config>(&outcome);
  if (!config) return 0;
  const std::string printed = config::printConfig(*config);
  const auto reloaded = load(file, printed);
  const auto* again = std::get_if<config::Config>(&reloaded);
  FUZZ_CHECK(again, "--print-config output does not load: " +
                        std::get<config::ConfigError>(reloaded).message + "\n" + printed);
  FUZZ_CHECK(sameConfig(*config, *again),
             "--print-config output loads as a different config\nprinted:\n" + printed +
                 "printed again:\n" + config::printConfig(*again));
  return 0;
}
