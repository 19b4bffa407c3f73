// TopologyDiscovery: the topology stage (core/topology.h) read from sysfs: which RDMA devices and
// ports exist, each port's link layer and GID table, the netdevs behind Ethernet ports, and each
// device's PCI function and NUMA node.
//
// Cost (a steady-state collection must stay a fraction of node_exporter's):
//  - /sys/class/infiniband is listed on every collection (one getdents), and each device's
//    directory is stat()ed: a device is rediscovered when it is new, when its directory's inode
//    changed (re-created under the same name), or when a read says it is gone (ENODEV/ENOENT/ENXIO
//    with its directory gone or re-created); a device that left the listing is dropped with its
//    held descriptors.
//  - Discovery lists the ports and reads what cannot change while the device object exists: the
//    PCI function and NUMA node (device/), each port's link_layer. The GID tables are read through
//    a window of held files (collectors/gid_table.h), rescanned whole every kGidFullRescanInterval
//    collections.
//  - The files the devices collector reads (attributes, each port's state, phys_state, rate and
//    counter directories: collectors/device_reader.h) are listed here with the device and handed
//    over in TopologyDevice::files; a counter directory that could not be listed is listed again
//    on the next collection, without a new generation.
//  - Netdevs come from the GID tables' ndevs. For Ethernet ports whose GIDs name none, device/net
//    is listed (FallbackNetdevs) when the device is discovered, when the set of such ports changes,
//    and every kNetdevRelistInterval; the GIDs' netdev names are re-read on that interval too.
#pragma once

#include <cstdint>
#include <string>

#include "collectors/rdma_netdevs.h"
#include "common/layout_cache.h"
#include "core/topology.h"

namespace rdmahd {

class TopologyDiscovery : public TopologySource {
 public:
  // A full GID table scan reads every slot of every port (mlx5 has 255 a port), where the window
  // reads the few the kernel allocates from, so it is rare (every 1024 collections: some 4 h at a
  // 15 s scrape interval); the window alone follows the kernel's allocation. bench/engine_bench.cc
  // on a bench/gen_tree.py --gid-table 255 tree measures a collection's CPU with such tables.
  static constexpr int kGidFullRescanInterval = 1024;

  explicit TopologyDiscovery(SteadyNow now = std::chrono::steady_clock::now);
  ~TopologyDiscovery() override;

  Topology Discover(const NodeFs& fs, const Config& config) override;

  // Descriptors currently held open (its own and the devices collector's files), and the
  // listing/open work done so far (tests, benchmarks). Not while a collection runs.
  std::size_t held_descriptors() const;
  const FsWork& work() const { return work_; }

  struct DeviceLayout;  // opaque: one device's cached layout and held files

 private:
  // Lists `layout`'s RdmaDeviceFiles anew (counter name lists shared with the other devices: ShareNames).
  void DiscoverFiles(const NodeFs& fs, DeviceLayout& layout);

  SteadyNow now_;
  LayoutCache<DeviceLayout> layouts_;  // by device name, for the sysfs root
  std::uint64_t collections_ = 0;
  std::uint64_t next_generation_ = 1;
  std::string read_buf_, path_buf_;
  FsWork work_;
};

}  // namespace rdmahd
