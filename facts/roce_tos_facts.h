// Facts of the "roce_tos" collector: the IP ToS RoCE traffic of each Ethernet RDMA port is sent
// with when the application does not set one, from the two places the kernel keeps it:
//  - rdma_cm's configfs default (/sys/kernel/config/rdma_cm/<dev>/ports/<N>/default_roce_tos),
//    used by every rdma_cm connection that does not call rdma_set_option(RDMA_OPTION_ID_TOS);
//  - mlx5's per-port override (/sys/class/infiniband/<dev>/tc/<N>/traffic_class, MLNX_OFED and
//    newer kernels), applied to every QP of the port, verbs or rdma_cm.
// Data only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rdmahd {

// Where the configfs default comes from.
enum class RoceTosSource {
  kConfigfs,          // default_roce_tos read
  kNoConfigfs,        // /sys/kernel/config/rdma_cm absent (rdma_cm not loaded or configfs not mounted)
  kNoDeviceEntry,     // configfs present, no <dev> folder (nobody ran mkdir): kernel default 0
  kUnreadable,        // present but unreadable or malformed (see note): unknown
};

struct RoceTosPortFacts {
  std::string device;  // mlx5_0
  std::uint32_t port = 0;

  RoceTosSource source = RoceTosSource::kUnreadable;
  std::optional<std::uint32_t> configfs_tos;       // 0..255 when source == kConfigfs
  std::optional<std::uint32_t> traffic_class;      // tc/N/traffic_class when present and set
  bool traffic_class_file = false;                 // tc/N/traffic_class exists
  std::string note;                                // why something is unknown

  // ToS in force for rdma_cm traffic: the traffic_class override, else configfs, else the kernel
  // default 0 when there is no configfs entry; absent when unknown.
  std::optional<std::uint32_t> effective_tos;
};

struct RoceTosFacts {
  std::vector<RoceTosPortFacts> ports;  // Ethernet ports, by (device, port)
};

}  // namespace rdmahd
