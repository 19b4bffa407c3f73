// Which Ethernet netdevs sit behind the node's RDMA (RoCE) ports. The RoCE QoS settings that
// matter (PFC, trust, ECN, MTU, pause) live on these netdevs, not on the RDMA device.
#pragma once

#include <string>
#include <vector>

#include "common/node_fs.h"
#include "common/result.h"
#include "config/config.h"

namespace rdmahd {

struct RdmaNetdev {
  std::string device;  // mlx5_0
  int port = 0;        // 1-based RDMA port
  std::string netdev;  // ens1f0np0
  bool operator==(const RdmaNetdev&) const = default;
};

// For each RDMA device matching `filter` and each of its ports whose link_layer is Ethernet: the
// netdev names from ports/P/gid_attrs/ndevs/N (the GID table's own record; reading an unused GID's
// entry fails, that is normal). When a port has no gid_attrs (older kernels, some drivers), falls
// back to device/net/*, picking the netdev whose dev_port is P-1, or all of them on a single-port
// device. InfiniBand ports are skipped: their IPoIB netdevs carry no RoCE QoS.
// Sorted by (device, port, netdev), no duplicates. A node without /sys/class/infiniband yields an
// empty list; unreadable devices are reported in `errors` and skipped.
std::vector<RdmaNetdev> DiscoverRdmaNetdevs(const NodeFs& fs, const DeviceFilter& filter,
                                            std::vector<std::string>& errors);

struct RdmaDevicesFacts;
class Snapshot;

// The same answer for this collection, read once: from the netdev collector's links when it ran
// already, else from the GID tables the devices collector read (only ports whose GIDs name no
// netdev touch sysfs, for the device/net fallback), else by DiscoverRdmaNetdevs.
std::vector<RdmaNetdev> RdmaNetdevsOf(const Snapshot& snapshot, const NodeFs& fs,
                                      const DeviceFilter& filter, std::vector<std::string>& errors);

}  // namespace rdmahd
