// The topology stage for tests that run a collector by hand: one discovery of `fs`, as the engine
// runs it before every collection.
#pragma once

#include "collectors/topology_discovery.h"
#include "common/node_fs.h"
#include "config/config.h"

namespace rdmahd::testing {

inline Topology DiscoverTopology(const NodeFs& fs, const Config& config) {
  TopologyDiscovery discovery;
  return discovery.Discover(fs, config);
}

}  // namespace rdmahd::testing
