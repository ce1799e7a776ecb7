#pragma once
// The process for one lock in etcd (--store etcd; leasehold, and leasehold run -- CMD): the
// etcd election (etcd/EtcdCampaign) through etcd's JSON gateway (etcd/EtcdGateway) with the TLS
// material and the password read from their files at start, and --status-file, served by
// app/LockProcess like the Kubernetes process. Nothing Kubernetes: no Events, no pod label.
#include "config/Config.h"
#include "log/Logger.h"

namespace leasehold::app {

// Runs until the shutdown completes; returns the exit status (2, after printing why, when a
// file cannot be read or an endpoint cannot work; in run mode RunMode::exitCode()).
int runEtcdSidecarProcess(const config::Config& cfg, const log::Logger& logger);

}  // namespace leasehold::app
