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
//    name), or when a read fails with ENODEV/ENOENT/ENXIO and the device's own directory is gone
//    or re-created (the kernel object behind a held descriptor is gone, e.g. after `rdma link
//    delete rxe0`); in that last case it is rediscovered and read again at once. While the
//    directory stands, such a failure costs that one value (an error of the collector): a dangling
//    symlink in counters/ must not hide the device and its DOWN port.
//  - Attributes that cannot change while the device object exists are read once (on the first
//    successful read after discovery) and their descriptor closed: board_id, hca_type, node_guid,
//    sys_image_guid, node_type (set by the driver before the device is registered) and each port's
//    link_layer (fixed by the port type; mlx4's IB/Ethernet switch re-registers the device).
//    fw_ver is re-read every scrape: mlx5 prints it from the live initialization segment, and a
//    live firmware activation (devlink reload action fw_activate) changes it without the device
//    going away. A re-created device is rediscovered (inode check), which drops these values.
//  - Counter names are listed once per layout and shared (immutable) with every snapshot; a scrape
//    stores only the values (CounterValues), so it allocates per port, not per counter file.
//  - GID tables have up to 255+ slots per port, nearly all zero. Each collection reads slots
//    0..(highest non-zero + 1), at least 0..2: the kernel puts a new GID in the lowest free slot
//    (the first slots are reserved for the default GIDs), so that window sees every addition and
//    removal. gid_attrs/types/N and ndevs/N are read only for non-zero GIDs, and only again when
//    the GID in that slot changed. The whole table is rescanned (open/read/close, not held) every
//    kGidFullRescanInterval collections as a safety net for drivers that fill slots differently.
//  - On the live /sys, hw_counters come over RDMA netlink (collectors/rdma_nl_stats.h): one
//    request per port instead of one read per counter file, with the same values. The files name
//    the counters (a name the netlink answer lacks is read from its file; names only netlink has
//    are ignored, so the metric set does not depend on the path). A port whose netlink read fails
//    goes back to the files until the device is rediscovered.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "collectors/collector.h"
#include "collectors/ib_sysfs_parse.h"
#include "collectors/rdma_nl_stats.h"

namespace rdmahd {

// One non-zero entry of a port's GID table.
struct RdmaGid {
  std::uint32_t index = 0;
  std::string gid;   // as sysfs prints it, e.g. "fe80:0000:0000:0000:0202:c9ff:fe00:0001"
  std::string type;  // gid_attrs/types/N: "IB/RoCE v1" or "RoCE v2"; empty if unreadable
  std::string ndev;  // gid_attrs/ndevs/N (Ethernet ports only); empty if none
};

// The values of one counter directory (ports/P/counters/, counters_ext/ or hw_counters/) at one
// collection. The file names are listed once, when the device is discovered, and shared
// (immutable) between the collector's layout and every snapshot; each collection stores only the
// values, one slot per name, nullopt when the file was missing, "N/A (no PMA)" or unreadable.
class CounterValues {
 public:
  using Names = std::vector<std::string>;  // sorted, unique

  CounterValues() = default;
  // All slots absent. `names` must be sorted and unique.
  explicit CounterValues(std::shared_ptr<const Names> names);
  // Convenience for tests and hand-built facts: the given values, any order, names unique.
  static CounterValues FromPairs(std::vector<std::pair<std::string, std::uint64_t>> values);

  // Slot access (every listed name, present or not), in name order.
  std::size_t slot_count() const { return values_.size(); }
  const std::string& name(std::size_t slot) const { return (*names_)[slot]; }
  const std::optional<std::uint64_t>& value(std::size_t slot) const { return values_[slot]; }
  void Set(std::size_t slot, std::uint64_t v);
  // The shared name list (null for a default-constructed, empty value set).
  const std::shared_ptr<const Names>& names() const { return names_; }

  // Lookup by file name (binary search, no allocation).
  std::optional<std::uint64_t> Find(std::string_view name) const;
  bool contains(std::string_view name) const { return Find(name).has_value(); }
  // Like std::map::at, for tests: throws std::out_of_range when `name` has no value.
  std::uint64_t at(std::string_view name) const;
  // Number of present values.
  std::size_t size() const { return present_; }
  bool empty() const { return present_ == 0; }

 private:
  std::shared_ptr<const Names> names_;
  std::vector<std::optional<std::uint64_t>> values_;  // parallel to *names_
  std::size_t present_ = 0;
};

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
  CounterValues counters;       // ports/P/counters/ (port_*_data in 4-byte words)
  CounterValues counters_ext;   // ports/P/counters_ext/ (mlx4 64-bit)
  CounterValues hw_counters;    // ports/P/hw_counters/

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

  // hw_counters over RDMA netlink (one request per port) when the sysfs root is the live /sys,
  // else from the files.
  RdmaDevicesCollector();
  // hw_counters over `netlink` whatever the sysfs root (tests); nullptr: always from the files.
  explicit RdmaDevicesCollector(std::unique_ptr<RdmaNetlinkStats> netlink);
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
  std::unique_ptr<RdmaNetlinkStats> netlink_;
  bool netlink_live_only_ = true;
};

}  // namespace rdmahd
