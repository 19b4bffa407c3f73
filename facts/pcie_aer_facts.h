// Facts of the "pcie_aer" collector: the PCIe Advanced Error Reporting counters of the PCI
// function behind each RDMA device (/sys/bus/pci/devices/BDF/aer_dev_{correctable,nonfatal,fatal},
// cumulative since boot or since the function was enumerated). Data only.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rdmahd {

enum class AerSeverity { kCorrectable, kNonFatal, kFatal };

struct AerCounter {
  std::string name;            // as the file spells it ("Receiver Error" or "RxErr")
  std::string canonical_name;  // the short name (CanonicalAerErrorName), else `name`
  std::uint64_t count = 0;
};

// One aer_dev_* file, as parsers/pcie_aer.h decodes it.
struct AerCounts {
  AerSeverity severity = AerSeverity::kCorrectable;
  std::vector<AerCounter> counters;    // in file order, without the TOTAL line
  std::optional<std::uint64_t> total;  // the TOTAL_ERR_* line; absent when the file has none
  // The TOTAL line names another severity than the file's (prometheus/procfs's fixture has
  // TOTAL_ERR_FATAL in an aer_dev_nonfatal file). The kernel never writes this; the value is kept
  // as the total and a caller may warn.
  bool total_mislabeled = false;
};

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
