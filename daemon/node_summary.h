// NodeSummary: the node's RDMA devices, ports and netdevs as an operator reads them at a glance,
// joined from one Report (Topology, the devices, netdev and roce collectors' facts). What the JSON
// API's /api/v1/devices and the status page at / both show. Built from the report only: reads no
// file. Every string is as the facts hold it (raw bytes from sysfs): the renderers escape.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/collection_engine.h"

namespace rdmahd {

struct PortSummary {
  std::uint32_t port = 0;
  std::optional<std::string> link_layer;   // "InfiniBand", "Ethernet"; nullopt: unknown
  std::optional<std::string> state;        // "ACTIVE", ...; nullopt: unknown
  std::optional<std::string> phys_state;   // "LinkUp", ...
  std::optional<std::uint64_t> rate_bytes_per_second;
  std::vector<std::string> netdevs;        // behind the port (RoCE), sorted
};

struct DeviceSummary {
  std::string name;
  std::optional<std::string> fw_ver, board_id, hca_type, node_guid, node_type, pci_address;
  std::optional<int> numa_node;
  std::optional<std::string> ports_unreadable;  // why the ports could not be listed
  std::vector<PortSummary> ports;
};

struct NetdevSummary {
  std::string name;
  std::vector<std::string> ports;          // "device/port" subjects it is behind
  std::optional<bool> present;             // nullopt: the netdev collector did not run
  std::optional<std::string> operstate;
  std::optional<std::int64_t> mtu;
  std::optional<std::int64_t> speed_mbps;
  // DCB: known only when the roce collector read it. `dcb_supported` false: the driver has no DCB.
  std::optional<bool> dcb_supported;
  std::optional<std::vector<int>> pfc_priorities;  // priorities with PFC on; nullopt: unknown
  std::optional<std::string> trust;                // "pcp" or "dscp"; nullopt: unknown
  // Priorities with ECN on, per role; nullopt: the role folder is not there (unknown).
  std::optional<std::vector<int>> ecn_np_priorities;
  std::optional<std::vector<int>> ecn_rp_priorities;
  std::string dcb_note;                            // why DCB is unknown, when it is
};

struct NodeSummary {
  bool devices_known = false;  // the devices collector's facts are in the report
  bool netdevs_known = false;  // the netdev collector's
  bool qos_known = false;      // the roce collector's
  std::vector<DeviceSummary> devices;  // by name
  std::vector<NetdevSummary> netdevs;  // by name
};

NodeSummary SummarizeNode(const Report& report);

}  // namespace rdmahd
