// Facts of the "pcie_aer" collector: the PCIe Advanced Error Reporting counters of the PCI
// function behind each RDMA device (/sys/bus/pci/devices/BDF/aer_dev_{correctable,nonfatal,fatal},
// cumulative since boot or since the function was enumerated). Data only.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "parsers/pcie_aer.h"

namespace rdmahd {

struct PcieAerDeviceFacts {
  std::string device;                      // RDMA device, e.g. mlx5_0
  std::optional<std::string> pci_address;  // "0000:3b:00.0"; absent for software devices
  // By AerSeverity (correctable, nonfatal, fatal); absent when the file is missing or unreadable
  // (a software device, a kernel without CONFIG_PCIEAER, a function without the AER capability).
  std::array<std::optional<AerCounts>, 3> counts;
  std::string note;  // why counts are absent ("" when all three were read)
};

struct PcieAerFacts {
  std::vector<PcieAerDeviceFacts> devices;  // by RDMA device name
};

}  // namespace rdmahd
