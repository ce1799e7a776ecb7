#pragma once
// --status-file's port for a Sidecar, whatever store it runs on: publish::StatusFile written off
// the loop by publish::StatusFileWriter on the process's one blocking worker (an fsync on a slow
// volume must never delay a renewal).
#include <string>

#include "lock/Sidecar.h"
#include "runtime/BlockingWorker.h"

namespace leasehold::app {

lock::StatusFilePort makeStatusFilePort(const std::string& path, runtime::BlockingWorker& worker);

}  // namespace leasehold::app
