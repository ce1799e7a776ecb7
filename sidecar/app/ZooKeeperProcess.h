#pragma once
// The process on ZooKeeper (--store zookeeper; leasehold, and leasehold run -- CMD): one
// ZooKeeper session over its own wire protocol (zookeeper/ZkSession), with the TLS material and
// the password read from their files at start; the lock is the election under /NAME
// (zookeeper/ZkCampaign), served by app/LockProcess with --status-file, run mode and the status
// API as on the other stores. Nothing Kubernetes: no Events, no pod label.
#include "config/Config.h"
#include "log/Logger.h"

namespace leasehold::app {

// Runs until the shutdown completes; returns the exit status (2, after printing why, when a
// file cannot be read or the connect string cannot work; in run mode RunMode::exitCode()).
int runZooKeeperProcess(const config::Config& cfg, const log::Logger& logger);

}  // namespace leasehold::app
