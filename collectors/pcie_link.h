// The "pcie" collector: the PCIe link of each RDMA device's PCI function (facts/pcie_facts.h).
// current/max link speed and width come from sysfs attributes anyone may read, re-read on every
// collection (a link can retrain). Max_Read_Request_Size and Max_Payload_Size come from the PCI
// Express capability's Device Control register in the function's `config` file: the kernel shows
// unprivileged readers only the first 64 bytes, where no capability lives, so as non-root they are
// unknown with that reason. The link attributes are held open (one pread each per scrape). The
// config space is read at most every kConfigRereadInterval (a config read is a bus transaction per
// dword, and the register changes only by `setpci`).
#pragma once

#include <chrono>
#include <map>
#include <string>

#include "core/collector.h"
#include "collectors/rdma_netdevs.h"
#include "common/held_files.h"
#include "facts/pcie_facts.h"

namespace rdmahd {

// Reads one PCI function's link attributes and, with `read_config`, its Device Control register
// (`pci_dir` under `fs`). With `held`, the link attributes are held open there (re-read with one
// pread per scrape).
PcieLinkFacts ReadPcieLink(const NodeFs& fs, const std::string& device, const std::string& pci_dir,
                           bool read_config = true, HeldFiles* held = nullptr);

class PcieLinkCollector : public Collector {
 public:
  static constexpr std::chrono::seconds kConfigRereadInterval{300};

  explicit PcieLinkCollector(SteadyNow now = std::chrono::steady_clock::now) : now_(std::move(now)) {}
  Status Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& outcome) override;
  void Render(const Snapshot& snapshot, MetricSink& sink) const override;

 private:
  struct ConfigRead {
    std::chrono::steady_clock::time_point at;
    std::optional<std::uint32_t> max_read_request_bytes, max_payload_bytes;
    std::string note;
  };
  SteadyNow now_;
  std::map<std::string, ConfigRead> config_;  // by PCI function folder
  HeldFiles held_;
};

}  // namespace rdmahd
