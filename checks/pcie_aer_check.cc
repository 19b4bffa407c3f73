// pcie_aer: the PCIe AER counters of each RDMA device's PCI function (facts/pcie_aer_facts.h), over
// the engine's history. `failed` when a fatal or non-fatal (uncorrectable) error was counted within
// the last hour; `warning` when more than host.pcie_aer.correctable_per_hour correctable errors were
// counted within the last hour (a marginal link: signal integrity, riser, slot): the increase the
// history observed, however short the span that observed it, never scaled up to an hour; `ok`
// otherwise. With one
// collection only (`rdma-healthd check`), no increase is known yet: counts since the function was
// enumerated are judged instead, uncorrectable ones as a warning.
#include <array>
#include <chrono>
#include <optional>

#include "common/duration_text.h"
#include "config/config_section.h"
#include "core/check.h"
#include "core/topology.h"
#include "facts/pcie_aer_facts.h"
#include "parsers/pcie_aer.h"

namespace rdmahd {
namespace {

struct PcieAerPolicy {
  std::uint32_t correctable_per_hour = 60;
};

constexpr auto kWindow = std::chrono::hours(1);
constexpr std::array<AerSeverity, 3> kSeverities = {AerSeverity::kCorrectable, AerSeverity::kNonFatal,
                                                    AerSeverity::kFatal};

std::string Series(const PcieAerDeviceFacts& d, AerSeverity s) {
  return "pcie_aer/" + d.device + "/" + std::string(AerSeverityName(s));
}

// The file's total of error messages, else the sum of its error bits.
std::optional<std::uint64_t> Total(const PcieAerDeviceFacts& d, AerSeverity s) {
  const auto& counts = d.counts[static_cast<std::size_t>(s)];
  if (!counts) return std::nullopt;
  if (counts->total) return counts->total;
  std::uint64_t sum = 0;
  for (const AerCounter& c : counts->counters) sum += c.count;
  return sum;
}

// "RxErr 12, BadTLP 3": the bits that are counted, for the reason.
std::string Bits(const PcieAerDeviceFacts& d, AerSeverity s) {
  std::string out;
  const auto& counts = d.counts[static_cast<std::size_t>(s)];
  if (!counts) return out;
  for (const AerCounter& c : counts->counters) {
    if (c.count == 0) continue;
    out += (out.empty() ? "" : ", ") + c.canonical_name + " " + std::to_string(c.count);
  }
  return out;
}

// "1 fatal and 0 non-fatal PCIe errors (0000:3b:00.0)<when>DLP 1; CmpltTO 1<after>"
std::string Uncorrectable(const PcieAerDeviceFacts& d, std::uint64_t fatal, std::uint64_t nonfatal,
                          const std::string& where, const std::string& when, const std::string& after) {
  const std::string fatal_bits = Bits(d, AerSeverity::kFatal), nonfatal_bits = Bits(d, AerSeverity::kNonFatal);
  return std::to_string(fatal) + " fatal and " + std::to_string(nonfatal) + " non-fatal PCIe errors" + where + when +
         fatal_bits + (fatal_bits.empty() || nonfatal_bits.empty() ? "" : "; ") + nonfatal_bits + after;
}

std::string Fix(const PcieAerDeviceFacts& d) {
  const std::string pci = d.pci_address ? *d.pci_address : std::string("<PCI address>");
  return "look at the link: `lspci -vvv -s " + pci + "` (LnkSta, the AER status registers) and the AER lines in "
         "`dmesg`; reseat the NIC, check its riser and slot, update its firmware; replace the card or the riser "
         "if the errors go on";
}

class PcieAerCheck : public Check {
 public:
  void Record(const Snapshot& snapshot, const Config&, History& history, History::TimePoint now) const override {
    const auto* facts = snapshot.Get<PcieAerFacts>();
    if (facts == nullptr) return;
    for (const PcieAerDeviceFacts& d : facts->devices) {
      // Another PCI function under the same device name is another counter.
      const std::uint64_t instance = d.pci_address ? std::hash<std::string>{}(*d.pci_address) : 0;
      for (AerSeverity s : kSeverities) {
        if (auto total = Total(d, s)) history.RecordCounter(Series(d, s), instance, *total, now);
      }
    }
  }

  void EvaluateOverTime(const CheckContext& ctx, std::vector<CheckResult>& out) const override {
    const auto* facts = ctx.snapshot.Get<PcieAerFacts>();
    if (facts == nullptr) return;
    const PcieAerPolicy& policy = ctx.config.Section<PcieAerPolicy>();
    for (const PcieAerDeviceFacts& d : facts->devices) {
      CheckResult r{"", d.device, Verdict::kUnknown, "", ""};
      if (!Total(d, AerSeverity::kCorrectable) && !Total(d, AerSeverity::kNonFatal) && !Total(d, AerSeverity::kFatal)) {
        r.reason = d.note.empty() ? "no AER counters" : d.note;
        out.push_back(std::move(r));
        continue;
      }
      std::array<std::optional<History::Growth>, 3> growth;
      bool known = true;
      for (AerSeverity s : kSeverities) {
        if (!Total(d, s)) continue;
        growth[static_cast<std::size_t>(s)] = ctx.history.Increase(Series(d, s), kWindow, ctx.now);
        known = known && growth[static_cast<std::size_t>(s)].has_value();
      }
      const auto inc = [&](AerSeverity s) {
        const auto& g = growth[static_cast<std::size_t>(s)];
        return g ? g->increase : 0;
      };
      const auto since_boot = [&](AerSeverity s) { return Total(d, s).value_or(0); };
      const std::string where = d.pci_address ? " (" + *d.pci_address + ")" : "";
      if (known) {
        const std::uint64_t uncorrectable = inc(AerSeverity::kFatal) + inc(AerSeverity::kNonFatal);
        // The correctable errors counted within the last hour, as observed: one error seen in 16 s
        // is one error, not 225 an hour.
        const auto& cor = growth[static_cast<std::size_t>(AerSeverity::kCorrectable)];
        const std::string limit = std::to_string(policy.correctable_per_hour) + " within an hour";
        if (uncorrectable > 0) {
          r.verdict = Verdict::kFailed;
          r.reason = Uncorrectable(d, inc(AerSeverity::kFatal), inc(AerSeverity::kNonFatal), where,
                                   " in the last hour (since boot: ", "): the NIC's transactions are being lost or retried");
          r.fix = Fix(d);
        } else if (cor && cor->increase > policy.correctable_per_hour) {
          r.verdict = Verdict::kWarning;
          r.reason = std::to_string(cor->increase) + " correctable PCIe errors" + where + " in " +
                     FormatSeconds(cor->seconds) + ", more than " + limit + " (since boot: " +
                     Bits(d, AerSeverity::kCorrectable) + "): a marginal link, retried by the hardware";
          r.fix = Fix(d);
        } else {
          r.verdict = Verdict::kOk;
          r.reason = "no uncorrectable PCIe errors" + where + " in the last hour, " +
                     (cor && cor->increase > 0
                          ? std::to_string(cor->increase) + " correctable in " + FormatSeconds(cor->seconds) +
                                " (at most " + limit + ")"
                          : "correctable ones at most " + limit);
        }
      } else if (since_boot(AerSeverity::kFatal) + since_boot(AerSeverity::kNonFatal) > 0) {
        // One collection: nothing is known of when they happened.
        r.verdict = Verdict::kWarning;
        r.reason = Uncorrectable(d, since_boot(AerSeverity::kFatal), since_boot(AerSeverity::kNonFatal), where,
                                 " since the function was enumerated (",
                                 "); whether they are recent needs a second collection");
        r.fix = Fix(d);
      } else if (since_boot(AerSeverity::kCorrectable) == 0) {
        r.verdict = Verdict::kOk;
        r.reason = "no PCIe errors" + where + " since the function was enumerated";
      } else {
        r.reason = std::to_string(since_boot(AerSeverity::kCorrectable)) + " correctable PCIe errors" + where +
                   " since the function was enumerated (" + Bits(d, AerSeverity::kCorrectable) +
                   "); their rate needs a second collection";
      }
      out.push_back(std::move(r));
    }
  }
};

}  // namespace

RDMAHD_REGISTER_CHECK("pcie_aer", PcieAerCheck,
                      "no uncorrectable PCIe AER errors in the last hour, correctable ones under the limit");

RDMAHD_REGISTER_CONFIG_SECTION(PcieAerPolicy, "host.pcie_aer", 80,
    {{"host.pcie_aer.correctable_per_hour", "`60`"}},
    [](const ConfigWalker& w, const ConfigNode& v, PcieAerPolicy& out) {
      return w.VisitMap(v, {{"correctable_per_hour", [&](const ConfigNode& f) {
                               std::optional<int> n;
                               Status s = w.ReadInt(f, 1, 1000000, n);
                               if (s.ok() && n) out.correctable_per_hour = static_cast<std::uint32_t>(*n);
                               return s;
                             }}});
    });

}  // namespace rdmahd
