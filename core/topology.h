// Topology: what RDMA hardware this node has and how it hangs together, discovered at the start of
// every collection (collectors/topology_discovery.h) and handed to every collector, so that no
// collector depends on another's facts. The engine also stores it in each Snapshot, for checks.
//
//   devices   /sys/class/infiniband/<device>, after the config's device filter
//   ports     each device's ports/<N>, with their link layer and GID table
//   links     (device, port) -> netdev for Ethernet (RoCE) ports, from the GID table's
//             gid_attrs/ndevs, or device/net/* when the table names none
//   placement each device's PCI function and NUMA node
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/registry.h"

namespace rdmahd {

struct RdmaDeviceFiles;  // collectors/device_reader.h

// One non-zero entry of a port's GID table.
struct RdmaGid {
  std::uint32_t index = 0;
  // Its 16 bytes; sysfs prints them as "fe80:0000:0000:0000:0202:c9ff:fe00:0001" (FormatGid in
  // parsers/ib_sysfs_parse.h gives that text back).
  std::array<std::uint8_t, 16> gid{};
  std::string type;  // gid_attrs/types/N: "IB/RoCE v1" or "RoCE v2"; empty if unreadable
  std::string ndev;  // gid_attrs/ndevs/N (Ethernet ports only); empty if none

  bool operator==(const RdmaGid&) const = default;
};

// A port's non-zero GIDs, by index. Immutable and shared: the port's GID table (collectors/
// gid_table.h) makes a new list only when a GID, its type or its netdev changed, so the Topology
// and the port facts of every collection hold one copy between them, and a collection on an
// unchanged node allocates none (a thousand SR-IOV devices have tens of thousands of GIDs).
class GidList {
 public:
  GidList() = default;
  explicit GidList(std::shared_ptr<const std::vector<RdmaGid>> gids) : gids_(std::move(gids)) {}

  std::size_t size() const { return gids_ ? gids_->size() : 0; }
  bool empty() const { return size() == 0; }
  const RdmaGid& operator[](std::size_t i) const { return (*gids_)[i]; }
  const RdmaGid& back() const { return gids_->back(); }
  const RdmaGid* begin() const { return gids_ ? gids_->data() : nullptr; }
  const RdmaGid* end() const { return gids_ ? gids_->data() + gids_->size() : nullptr; }
  // True when both name the same list (not merely equal GIDs).
  bool SharesWith(const GidList& other) const { return gids_ == other.gids_; }

 private:
  std::shared_ptr<const std::vector<RdmaGid>> gids_;
};

struct TopologyPort {
  std::uint32_t port = 0;
  std::optional<std::string> link_layer;  // "InfiniBand" or "Ethernet" (trimmed); nullopt: unreadable
  std::string netdev;                     // netdev of the port's RoCE GIDs (lowest index); empty for IB
  GidList gids;                           // non-zero GIDs, by index
  // Number of GIDs of type "RoCE v2"; nullopt when the port has no readable GID table.
  std::optional<std::uint32_t> roce_v2_gid_count;

  bool IsEthernet() const { return link_layer && *link_layer == "Ethernet"; }
};

struct TopologyDevice {
  std::string name;                        // e.g. mlx5_0
  std::optional<int> numa_node;            // device/numa_node as read; -1 = the platform has no NUMA info
  std::optional<std::string> pci_address;  // basename of the device/ link, e.g. "0000:3b:00.0"
  std::vector<TopologyPort> ports;         // by port number
  // Changes whenever the device is discovered anew (first seen, re-created under the same name):
  // a collector keeping per-device state (held descriptors) drops it when this changes.
  std::uint64_t generation = 0;
  // The device's `device` entry (absolute, under the sysfs root) when it is a folder: the PCI
  // function's on a real node; absent for software devices (rxe, siw). Fixed while the device
  // exists, so discovered with it: the host collectors need it on every collection.
  std::optional<std::string> device_dir;
  // Why the device's ports could not be listed (its directory or ports/ unreadable: EACCES, ...);
  // `ports` is then empty though the device has ports. Absent when they were listed (or it has none).
  std::optional<std::string> ports_unreadable;
  // The files of the device and its ports that the devices collector reads (state, rate,
  // counters...), discovered here with the device so that no collector discovers it again. Null
  // from a topology source that does not read sysfs.
  std::shared_ptr<RdmaDeviceFiles> files;
};

// One Ethernet netdev behind an RDMA port.
struct RdmaNetdev {
  std::string device;  // mlx5_0
  int port = 0;        // 1-based RDMA port
  std::string netdev;  // ens1f0np0
  bool operator==(const RdmaNetdev&) const = default;
};

struct Topology {
  bool class_dir_present = false;     // /sys/class/infiniband exists (RDMA core loaded)
  std::vector<TopologyDevice> devices;  // by name
  // Every netdev each Ethernet port's GIDs name (VLAN netdevs included), sorted by (device, port,
  // netdev), no duplicates.
  std::vector<RdmaNetdev> links;
  // Problems discovery met (a device or port it could not list, ...), each naming the path.
  std::vector<std::string> errors;
  // Set when discovery failed outright (class/infiniband unreadable): nothing above is usable.
  std::optional<std::string> failure;

  const TopologyDevice* FindDevice(std::string_view name) const {
    for (const auto& d : devices) {
      if (d.name == name) return &d;
    }
    return nullptr;
  }
  // The distinct netdevs of `links`, sorted.
  std::vector<std::string> Netdevs() const;
  // Ports of all devices (what a per-port fact vector reserves).
  std::size_t PortCount() const {
    std::size_t n = 0;
    for (const auto& d : devices) n += d.ports.size();
    return n;
  }
};

class NodeFs;
struct Config;

// The topology stage's implementation (collectors/topology_discovery.h reads sysfs). The engine
// runs it at the start of every collection, never concurrently with itself, so it may cache what
// it discovered (held descriptors, listings) between calls.
class TopologySource {
 public:
  virtual ~TopologySource() = default;
  virtual Topology Discover(const NodeFs& fs, const Config& config) = 0;
};

// The binary's topology source: registered once, as "sysfs".
Registry<TopologySource>& TopologySourceRegistry();

#define RDMAHD_REGISTER_TOPOLOGY_SOURCE(name, Type, description)                         \
  [[maybe_unused]] static const bool rdmahd_topology_registered_##Type =                 \
      ::rdmahd::internal::RegisterOrDie(::rdmahd::TopologySourceRegistry(),               \
                                        {name, description, [] { return std::make_unique<Type>(); }})

}  // namespace rdmahd
