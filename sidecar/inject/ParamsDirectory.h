#pragma once
// The parameters ConfigMap mounted as files: one file per key, as the kubelet projects it (each
// key a symlink into ..data, swapped whole on an update). Read with plain blocking reads: a
// dozen small files on a tmpfs, a few times a minute (InjectCommand's reload poll).
#include <map>
#include <string>
#include <variant>

namespace leasehold::inject {

class ParamsDirectory {
 public:
  // Each known key's file under `dir` (InjectorParams' keys; other files are not read). A key
  // without a file is left out (InjectorParams says which is missing); a file that exists but
  // cannot be read, or a directory that does not exist, is an error naming the path.
  static std::variant<std::map<std::string, std::string>, std::string> read(const std::string& dir);
};

}  // namespace leasehold::inject
