// The "devices" collector: every RDMA device under /sys/class/infiniband, its ports, GIDs and
// counters, as typed facts (RdmaDevicesFacts) and as rdma_device_* / rdma_port_* metrics.
//
// Performance design (a fresh scrape must cost a fraction of node_exporter's):
//  - /sys/class/infiniband is re-listed on every collection (one getdents).
//  - Each device's layout (ports, which attribute and counter files exist, GID table size) is
//    discovered once and cached. Each attribute file is a HeldFile (common/node_fs.h) owned by the
//    layout: opened once, re-read with pread at offset 0, so a steady-state scrape is one pread per
//    attribute, no open/close and no path lookup. Dropping a layout closes its descriptors.
//  - A device is rediscovered when it is new, when it left the listing (its layout and
//    descriptors are dropped), when its directory's inode changed (re-created under the same
//    name), or when a read fails with ENODEV/ENOENT/ENXIO (the kernel object behind a held
//    descriptor is gone, e.g. after `rdma link delete rxe0`); in that last case it is
//    rediscovered and read again at once.
//  - GID tables have up to 255+ slots per port, nearly all zero. Each collection reads slots
//    0..(highest non-zero + 1), at least 0..2: the kernel puts a new GID in the lowest free slot
//    (the first slots are reserved for the default GIDs), so that window sees every addition and
//    removal. gid_attrs/types/N and ndevs/N are read only for non-zero GIDs, and only again when
//    the GID in that slot changed. The whole table is rescanned (open/read/close, not held) every
//    kGidFullRescanInterval collections as a safety net for drivers that fill slots differently.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collectors/collector.h"
#include "collectors/ib_sysfs_parse.h"

namespace rdmahd {

// One non-zero entry of a port's GID table.
struct RdmaGid {
  std::uint32_t index = 0;
  std::string gid;   // as sysfs prints it, e.g. "fe80:0000:0000:0000:0202:c9ff:fe00:0001"
  std::string type;  // gid_attrs/types/N: "IB/RoCE v1" or "RoCE v2"; empty if unreadable
  std::string ndev;  // gid_attrs/ndevs/N (Ethernet ports only); empty if none
};

// Counter values by file name; transparent, so lookups by string_view do not allocate.
using CounterMap = std::map<std::string, std::uint64_t, std::less<>>;

struct RdmaPortFacts {
  std::string device;
  std::uint32_t port = 0;
  std::optional<SysfsEnumValue> state;       // ports/P/state, e.g. {4, "ACTIVE"}
  std::optional<SysfsEnumValue> phys_state;  // ports/P/phys_state, e.g. {5, "LinkUp"}
  std::optional<std::uint64_t> rate_bytes_per_second;  // ports/P/rate
  std::optional<std::string> link_layer;     // "InfiniBand" or "Ethernet" (trimmed)
  std::string netdev;  // netdev of the port's RoCE GIDs (lowest index); empty for IB
  std::vector<RdmaGid> gids;                 // non-zero GIDs, by index
  // Number of GIDs of type "RoCE v2"; nullopt when the port has no readable GID table.
  std::optional<std::uint32_t> roce_v2_gid_count;
  // Raw values by file name; a file that is missing, "N/A (no PMA)" or unreadable is absent.
  CounterMap counters;          // ports/P/counters/ (port_*_data in 4-byte words)
  CounterMap counters_ext;      // ports/P/counters_ext/ (mlx4 64-bit)
  CounterMap hw_counters;       // ports/P/hw_counters/

  bool IsEthernet() const { return link_layer && *link_layer == "Ethernet"; }
  std::string Subject() const { return device + "/" + std::to_string(port); }  // "mlx5_0/1"
};

struct RdmaDeviceFacts {
  std::string name;  // e.g. mlx5_0
  std::optional<std::string> fw_ver, board_id, hca_type, node_guid, sys_image_guid;
  std::optional<std::string> node_type;  // as printed, e.g. "1: CA"
  std::optional<int> numa_node;          // device/numa_node; -1 when the platform has no NUMA info
  std::optional<std::string> pci_address;  // basename of the device/ link, e.g. "0000:3b:00.0"
  std::vector<RdmaPortFacts> ports;        // by port number
};

struct RdmaDevicesFacts {
  std::vector<RdmaDeviceFacts> devices;  // by name, after config.devices filtering
  bool class_dir_present = false;        // /sys/class/infiniband exists (RDMA core loaded)
};

class RdmaDevicesCollector : public Collector {
 public:
  // A full GID table scan costs ~75 ms CPU on 32 ports x 255 slots, so it is rare (every ~4 h at
  // a 15 s scrape interval); the window alone follows the kernel's allocation.
  static constexpr int kGidFullRescanInterval = 1024;

  RdmaDevicesCollector();
  ~RdmaDevicesCollector() override;

  std::string_view Name() const override { return "devices"; }
  std::string_view Description() const override {
    return "RDMA devices and ports from /sys/class/infiniband: info, state, rate, GIDs, counters";
  }
  Status Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& outcome) override;
  void Render(const Snapshot& snapshot, MetricSink& sink) const override;

  // Descriptors currently held open (for tests and the benchmark).
  std::size_t held_descriptors() const;

  // Opaque: the cached per-device layout and the collector's state (held descriptors, layouts).
  struct DeviceLayout;
  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace rdmahd
