#pragma once
// The process on etcd (--store etcd; leasehold, and leasehold run -- CMD): etcd's JSON gateway
// (etcd/EtcdGateway) with the TLS material and the password read from their files at start;
// one lock is the etcd election (etcd/EtcdCampaign) and --status-file, served by app/LockProcess;
// --shards N is etcd/EtcdShardGroup, served by app/ShardGroupProcess, like the Kubernetes
// processes. Nothing Kubernetes: no Events, no pod label.
#include "config/Config.h"
#include "log/Logger.h"

namespace leasehold::app {

// Runs until the shutdown completes; returns the exit status (2, after printing why, when a
// file cannot be read or an endpoint cannot work; in run mode RunMode::exitCode()).
int runEtcdProcess(const config::Config& cfg, const log::Logger& logger);

}  // namespace leasehold::app
