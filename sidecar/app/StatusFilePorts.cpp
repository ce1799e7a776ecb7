#include "app/StatusFilePorts.h"

#include <memory>

#include "publish/StatusFile.h"
#include "publish/StatusFileWriter.h"

namespace leasehold::app {

lock::StatusFilePort makeStatusFilePort(const std::string& path, runtime::BlockingWorker& worker) {
  auto file = std::make_shared<publish::StatusFile>(path);
  auto writer = std::make_shared<publish::StatusFileWriter>(
      [file](const std::string& content) { return file->write(content); }, worker);
  return {file->path(), [writer](const std::string& content) { return writer->writeNow(content); },
          [writer](std::string content, auto outcome) {
            writer->write(std::move(content), std::move(outcome));
          },
          [writer](auto done) { writer->flush(std::move(done)); }};
}

}  // namespace leasehold::app
