// The RDMA devices the host-readiness collectors (pcie, roce_tos, plumbing) look at:
// the collection's Topology, plus where each device's PCI function folder is (device/).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/node_fs.h"
#include "core/topology.h"

namespace rdmahd {

struct HostRdmaPort {
  std::uint32_t number = 0;
  std::optional<std::string> link_layer;  // "Ethernet", "InfiniBand"; absent: unreadable
  bool IsEthernet() const { return link_layer && *link_layer == "Ethernet"; }
};

struct HostRdmaDevice {
  std::string name;
  // The device's `device` entry: the PCI function's folder (a symlink on a real node). Absent for
  // software devices (rxe, siw), which have none.
  std::optional<std::string> device_dir;  // absolute, under the sysfs root
  std::optional<std::string> pci_address;  // basename of the device/ link, e.g. "0000:3b:00.0"
  std::vector<HostRdmaPort> ports;         // by number
  const TopologyDevice* topology = nullptr;  // the device in the collection's Topology

  // The kernel module of a software device, known by its name (rdma_rxe for rxe*, siw for siw*);
  // nullopt for any other name.
  std::optional<std::string> SoftwareDriverModule() const;
  // Why there is no PCI function: a software device has none; any other device without device/ is
  // a capture that left the link out (or a kernel object this daemon does not know).
  std::string NoPciFunctionReason() const;
};

// `text` (a message or path) with the NodeFs roots written as the kernel's own (/sys, /proc, /dev),
// so reasons read the same on a live node and on a capture, wherever the capture lies.
std::string KernelPaths(const NodeFs& fs, std::string text);

// The Topology's devices (already filtered by the config), by name, each with its device/ folder
// when it has one.
std::vector<HostRdmaDevice> HostRdmaDevices(const Topology& topology);

}  // namespace rdmahd
