#pragma once
// The clocks token sources read, injectable so tests can move time by hand.
#include "cluster/ExecTokenSource.h"
#include "cluster/FileTokenSource.h"

namespace leasehold::cluster {

// Leaving one empty means the production clock.
struct RestConfigClocks {
  FileTokenSource::MonoClock monotonic = time::BootClock::now;
  ExecTokenSource::WallClock wall = ExecTokenSource::defaultWallClock;
};

}  // namespace leasehold::cluster
