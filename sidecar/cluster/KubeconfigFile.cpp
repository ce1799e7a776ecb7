#include "cluster/KubeconfigFile.h"

#include <yaml-cpp/yaml.h>

#include <functional>
#include <set>

#include "cluster/RestConfigFileReader.h"

namespace leasehold::cluster {

std::string KubeconfigLocation::describe() const {
  std::string text = "kubeconfig " + file.string();
  if (line > 0) text += ":" + std::to_string(line);
  if (!keyPath.empty()) text += ": " + keyPath;
  return text;
}

LoadError KubeconfigLocation::error(const std::string& problem) const {
  return LoadError{describe() + ": " + problem};
}

namespace {

// Thrown inside this file only and turned back into a LoadError by KubeconfigFile::parse(): the
// reader is deeply nested and every step can fail.
struct KubeconfigParseFailure {
  LoadError error;
};

const char* nodeKind(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return "null";
    case YAML::NodeType::Scalar:
      return "a scalar";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a map";
    default:
      return "nothing";
  }
}

// Walks the document without ever writing to it (operator[] on a non-const node inserts) and
// names every key itself, since yaml-cpp's conversion errors do not.
class KubeconfigYamlReader {
 public:
  explicit KubeconfigYamlReader(std::filesystem::path file) : file_(std::move(file)) {}

  KubeconfigLocation at(const YAML::Node& node, std::string keyPath) const {
    const auto mark = node.Mark();
    return KubeconfigLocation{file_, mark.line >= 0 ? mark.line + 1 : 0, std::move(keyPath)};
  }

  [[noreturn]] void fail(const YAML::Node& node, const std::string& keyPath,
                         const std::string& problem) const {
    throw KubeconfigParseFailure{at(node, keyPath).error(problem)};
  }

  // Calls visit(key, value, keyPath) for each entry of a map; null counts as an empty map.
  void forEachEntry(const YAML::Node& map, const std::string& path,
                    const std::function<void(const std::string&, const YAML::Node&,
                                             const std::string&)>& visit) const {
    if (map.IsNull()) return;
    if (!map.IsMap()) fail(map, path, std::string("expected a map, got ") + nodeKind(map));
    for (const auto& entry : map) {
      if (!entry.first.IsScalar()) fail(entry.first, path, "keys must be strings");
      const std::string key = entry.first.Scalar();
      visit(key, entry.second, path.empty() ? key : path + "." + key);
    }
  }

  // Calls visit(item, itemPath) for each element of a list; null counts as an empty list.
  void forEachItem(const YAML::Node& list, const std::string& path,
                   const std::function<void(const YAML::Node&, const std::string&)>& visit) const {
    if (list.IsNull()) return;
    if (!list.IsSequence()) fail(list, path, std::string("expected a list, got ") + nodeKind(list));
    std::size_t index = 0;
    for (const auto& item : list) {
      visit(item, path + "[" + std::to_string(index) + "]");
      ++index;
    }
  }

  std::optional<KubeconfigValue<std::string>> string(const YAML::Node& node,
                                                     const std::string& path) const {
    if (node.IsNull()) return std::nullopt;
    if (!node.IsScalar()) fail(node, path, std::string("expected a string, got ") + nodeKind(node));
    return KubeconfigValue<std::string>{node.Scalar(), at(node, path)};
  }

  std::string requiredString(const YAML::Node& node, const std::string& path) const {
    auto value = string(node, path);
    if (!value || value->value.empty()) fail(node, path, "must not be empty");
    return value->value;
  }

  std::optional<KubeconfigValue<bool>> boolean(const YAML::Node& node,
                                               const std::string& path) const {
    if (node.IsNull()) return std::nullopt;
    bool value = false;
    if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) {
      fail(node, path, std::string("expected true or false, got ") + nodeKind(node));
    }
    return KubeconfigValue<bool>{value, at(node, path)};
  }

  std::vector<std::string> stringList(const YAML::Node& node, const std::string& path) const {
    std::vector<std::string> out;
    forEachItem(node, path, [&](const YAML::Node& item, const std::string& itemPath) {
      auto value = string(item, itemPath);
      out.push_back(value ? value->value : std::string());
    });
    return out;
  }

  // A named list entry: {name: ..., <payload>: {...}}. Duplicate names in one file are an error,
  // as in client-go.
  template <class Entry>
  std::vector<Entry> namedList(
      const YAML::Node& list, const std::string& path, const std::string& payloadKey,
      const std::function<void(Entry&, const YAML::Node&, const std::string&)>& readPayload) const {
    std::vector<Entry> entries;
    std::set<std::string> seen;
    forEachItem(list, path, [&](const YAML::Node& item, const std::string& itemPath) {
      Entry entry;
      bool haveName = false;
      bool havePayload = false;
      forEachEntry(
          item, itemPath,
          [&](const std::string& key, const YAML::Node& value, const std::string& keyPath) {
            if (key == "name") {
              entry.name = requiredString(value, keyPath);
              haveName = true;
            } else if (key == payloadKey) {
              entry.location = at(value, keyPath);
              readPayload(entry, value, keyPath);
              havePayload = true;
            }
          });
      if (!haveName) fail(item, itemPath + ".name", "missing");
      if (!havePayload) entry.location = at(item, itemPath + "." + payloadKey);
      if (!seen.insert(entry.name).second) {
        fail(item, itemPath + ".name", "duplicate name \"" + entry.name + "\"");
      }
      entries.push_back(std::move(entry));
    });
    return entries;
  }

  void readCluster(KubeconfigCluster& cluster, const YAML::Node& node,
                   const std::string& path) const {
    forEachEntry(node, path,
                 [&](const std::string& key, const YAML::Node& value, const std::string& keyPath) {
                   if (key == "server") {
                     cluster.server = string(value, keyPath);
                   } else if (key == "certificate-authority") {
                     cluster.certificateAuthority = string(value, keyPath);
                   } else if (key == "certificate-authority-data") {
                     cluster.certificateAuthorityData = string(value, keyPath);
                   } else if (key == "insecure-skip-tls-verify") {
                     cluster.insecureSkipTlsVerify = boolean(value, keyPath);
                   } else if (key == "tls-server-name") {
                     cluster.tlsServerName = string(value, keyPath);
                   } else if (key == "proxy-url") {
                     cluster.proxyUrl = string(value, keyPath);
                   }
                 });
  }

  KubeconfigExec readExec(const YAML::Node& node, const std::string& path) const {
    KubeconfigExec exec;
    exec.location = at(node, path);
    bool haveCommand = false;
    forEachEntry(
        node, path,
        [&](const std::string& key, const YAML::Node& value, const std::string& keyPath) {
          if (key == "command") {
            exec.command = {requiredString(value, keyPath), at(value, keyPath)};
            haveCommand = true;
          } else if (key == "args") {
            exec.args = stringList(value, keyPath);
          } else if (key == "env") {
            forEachItem(value, keyPath, [&](const YAML::Node& item, const std::string& itemPath) {
              std::optional<std::string> name;
              std::string envValue;
              forEachEntry(item, itemPath,
                           [&](const std::string& k, const YAML::Node& v, const std::string& p) {
                             if (k == "name") name = requiredString(v, p);
                             // The value may be a secret: only its type is ever reported.
                             if (k == "value") {
                               auto s = string(v, p);
                               envValue = s ? s->value : std::string();
                             }
                           });
              if (!name) fail(item, itemPath + ".name", "missing");
              exec.env.emplace_back(*name, std::move(envValue));
            });
          } else if (key == "apiVersion") {
            exec.apiVersion = string(value, keyPath);
          } else if (key == "interactiveMode") {
            exec.interactiveMode = string(value, keyPath);
          } else if (key == "installHint") {
            auto hint = string(value, keyPath);
            if (hint) exec.installHint = hint->value;
          } else if (key == "provideClusterInfo") {
            auto provide = boolean(value, keyPath);
            exec.provideClusterInfo = provide && provide->value;
          }
        });
    if (!haveCommand) fail(node, path + ".command", "missing");
    return exec;
  }

  void readUser(KubeconfigUser& user, const YAML::Node& node, const std::string& path) const {
    forEachEntry(node, path,
                 [&](const std::string& key, const YAML::Node& value, const std::string& keyPath) {
                   if (key == "token") {
                     user.token = string(value, keyPath);
                   } else if (key == "tokenFile") {
                     user.tokenFile = string(value, keyPath);
                   } else if (key == "client-certificate") {
                     user.clientCertificate = string(value, keyPath);
                   } else if (key == "client-certificate-data") {
                     user.clientCertificateData = string(value, keyPath);
                   } else if (key == "client-key") {
                     user.clientKey = string(value, keyPath);
                   } else if (key == "client-key-data") {
                     user.clientKeyData = string(value, keyPath);
                   } else if (key == "exec") {
                     if (!value.IsNull()) user.exec = readExec(value, keyPath);
                   } else if (key == "auth-provider" || key == "username" || key == "password") {
                     if (!value.IsNull()) user.unsupportedAuth = at(value, keyPath);
                   }
                 });
  }

  void readContext(KubeconfigContext& context, const YAML::Node& node,
                   const std::string& path) const {
    forEachEntry(node, path,
                 [&](const std::string& key, const YAML::Node& value, const std::string& keyPath) {
                   if (key == "cluster") {
                     context.cluster = string(value, keyPath);
                   } else if (key == "user") {
                     context.user = string(value, keyPath);
                   } else if (key == "namespace") {
                     context.namespaceName = string(value, keyPath);
                   }
                 });
  }

  void readDocument(const YAML::Node& root, KubeconfigFile& file) const {
    if (!root.IsDefined() || root.IsNull()) return;  // an empty file is an empty config
    if (!root.IsMap()) fail(root, "", std::string("expected a map, got ") + nodeKind(root));
    forEachEntry(
        root, "", [&](const std::string& key, const YAML::Node& value, const std::string& keyPath) {
          if (key == "current-context") {
            file.currentContext = string(value, keyPath);
            if (file.currentContext && file.currentContext->value.empty()) {
              file.currentContext.reset();
            }
          } else if (key == "clusters") {
            file.clusters = namedList<KubeconfigCluster>(
                value, keyPath, "cluster",
                [this](KubeconfigCluster& c, const YAML::Node& n, const std::string& p) {
                  readCluster(c, n, p);
                });
          } else if (key == "users") {
            file.users =
                namedList<KubeconfigUser>(value, keyPath, "user",
                                          [this](KubeconfigUser& u, const YAML::Node& n,
                                                 const std::string& p) { readUser(u, n, p); });
          } else if (key == "contexts") {
            file.contexts = namedList<KubeconfigContext>(
                value, keyPath, "context",
                [this](KubeconfigContext& c, const YAML::Node& n, const std::string& p) {
                  readContext(c, n, p);
                });
          }
        });
  }

 private:
  std::filesystem::path file_;
};

}  // namespace

LoadResult<KubeconfigFile> KubeconfigFile::parse(std::string_view yaml,
                                                 const std::filesystem::path& path) {
  KubeconfigFile file;
  file.path = path;
  try {
    const YAML::Node root = YAML::Load(std::string(yaml));
    KubeconfigYamlReader(path).readDocument(root, file);
  } catch (const KubeconfigParseFailure& failure) {
    return failure.error;
  } catch (const YAML::Exception& e) {
    // Parser messages describe the syntax problem, not the content, so they are safe to show.
    KubeconfigLocation where{path, e.mark.line >= 0 ? e.mark.line + 1 : 0, ""};
    return where.error("not valid YAML: " + e.msg);
  }
  return file;
}

LoadResult<KubeconfigFile> KubeconfigFile::read(const std::filesystem::path& path) {
  auto content = RestConfigFileReader::read(path);
  if (!content) return LoadError{"kubeconfig " + content.message()};
  return parse(*content, path);
}

}  // namespace leasehold::cluster
