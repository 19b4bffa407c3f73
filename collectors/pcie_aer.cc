// The "pcie_aer" collector: PCIe AER counters of each RDMA device's PCI function
// (facts/pcie_aer_facts.h), decoded by parsers/pcie_aer. The kernel keeps them in memory (reading
// them is no bus transaction), so they are read on every collection, held open like the link
// attributes. A file that is missing is the kernel or the function saying it has no AER (noted,
// no series); one that cannot be decoded costs its own series and an error naming the file.
#include <algorithm>
#include <array>

#include "collectors/host_devices.h"
#include "common/held_files.h"
#include "core/collector.h"
#include "facts/pcie_aer_facts.h"
#include "parsers/pcie_aer.h"

namespace rdmahd {
namespace {

constexpr std::array<AerSeverity, 3> kSeverities = {AerSeverity::kCorrectable, AerSeverity::kNonFatal,
                                                    AerSeverity::kFatal};

class PcieAerCollector : public Collector {
 public:
  Status Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& outcome) override {
    PcieAerFacts facts;
    facts.devices.reserve(ctx.topology.devices.size());
    std::vector<std::string> dirs;
    for (const TopologyDevice& d : ctx.topology.devices) {
      PcieAerDeviceFacts f;
      f.device = d.name;
      f.pci_address = d.pci_address;
      if (!d.device_dir) {
        f.note = "no PCI function (" + NoPciFunctionReason(d) + ")";
        facts.devices.push_back(std::move(f));
        continue;
      }
      dirs.push_back(*d.device_dir);
      std::vector<std::string> missing;
      for (AerSeverity severity : kSeverities) {
        const std::string file = "aer_dev_" + std::string(AerSeverityName(severity));
        const std::string path = *d.device_dir + "/" + file;
        Result<std::string_view> text = held_.Read(ctx.fs, path);
        if (!text.ok()) {
          missing.push_back(file);
          continue;
        }
        Result<AerCounts> counts = ParseAerDevFile(*text, severity);
        if (!counts.ok()) {
          outcome.errors.push_back(d.name + ": " + KernelPaths(ctx.fs, path) + ": " + counts.error().message);
          continue;
        }
        // Old and new names of one bit in one file ("Receiver Error" and "RxErr") would be one series
        // twice; the kernel never prints both, so the file is not the kernel's.
        std::vector<std::string_view> names;
        for (const AerCounter& c : counts->counters) names.push_back(c.canonical_name);
        std::sort(names.begin(), names.end());
        if (std::adjacent_find(names.begin(), names.end()) != names.end()) {
          outcome.errors.push_back(d.name + ": " + KernelPaths(ctx.fs, path) +
                                   ": one error counted under its old and its new name");
          continue;
        }
        f.counts[static_cast<std::size_t>(severity)] = std::move(*counts);
      }
      if (missing.size() == kSeverities.size()) {
        f.note = "no AER counters (" + KernelPaths(ctx.fs, *d.device_dir) +
                 "/aer_dev_* absent: a kernel without CONFIG_PCIEAER, or a function without the AER capability)";
      } else if (!missing.empty()) {
        std::string list;
        for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
        f.note = list + " unreadable";
      }
      facts.devices.push_back(std::move(f));
    }
    // A device that left (or was re-created elsewhere) leaves its held files behind: start over.
    std::sort(dirs.begin(), dirs.end());
    if (dirs != dirs_) held_.Clear();
    dirs_ = std::move(dirs);
    snapshot.Put(std::move(facts));
    return Status::Ok();
  }

  void Render(const Snapshot& snapshot, MetricSink& sink) const override {
    const PcieAerFacts* facts = snapshot.Get<PcieAerFacts>();
    if (facts == nullptr) return;
    auto errors = sink.Counter("rdma_pcie_aer_errors_total",
                               "PCIe AER errors of an RDMA device's PCI function by severity and error (the kernel's "
                               "short name: RxErr, BadTLP, ...), since the function was enumerated (aer_dev_*).");
    auto messages = sink.Counter("rdma_pcie_aer_messages_total",
                                 "PCIe AER error messages of an RDMA device's PCI function by severity (TOTAL_ERR_* of "
                                 "aer_dev_*: one message may set several error bits).");
    for (const PcieAerDeviceFacts& f : facts->devices) {
      for (const auto& counts : f.counts) {
        if (!counts) continue;
        const std::string severity(AerSeverityName(counts->severity));
        for (const AerCounter& c : counts->counters) {
          errors.Add({{"device", f.device}, {"severity", severity}, {"error", c.canonical_name}},
                     static_cast<double>(c.count));
        }
        if (counts->total) messages.Add({{"device", f.device}, {"severity", severity}}, static_cast<double>(*counts->total));
      }
    }
  }

 private:
  HeldFiles held_;
  std::vector<std::string> dirs_;  // the PCI function folders held_ holds files of
};

}  // namespace

RDMAHD_REGISTER_COLLECTOR("pcie_aer", PcieAerCollector,
                          "PCIe AER counters (correctable, non-fatal, fatal) of each RDMA device's PCI function");

}  // namespace rdmahd
