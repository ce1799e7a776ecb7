#pragma once
// The status file (--status-file): the JSON of GET /leader, replaced atomically (file::AtomicFile,
// mode 0644) so that a reader sees either the previous content or the new one, never a mix or an
// empty file.
// The caller decides when to write (every change and every renewal). write() is synchronous and
// fsyncs twice, which a slow volume can stretch past a renew deadline: the sidecar calls it from
// StatusFileWriter's thread, never from the event loop (except once at start).
//
// A file cannot retract itself when the process dies, which is why the JSON carries validUntil:
// readers must trust leader=true only while validUntil is in the future.
#include <optional>
#include <string>

#include "file/AtomicFile.h"

namespace leasehold::publish {

class StatusFile {
 public:
  explicit StatusFile(std::string path);

  // Replaces the file's content with `content`. Returns why not on failure (the previous
  // content is then left in place and the temp file removed). Never throws.
  std::optional<std::string> write(const std::string& content);

  const std::string& path() const { return file_.path(); }

 private:
  file::AtomicFile file_;
};

}  // namespace leasehold::publish
