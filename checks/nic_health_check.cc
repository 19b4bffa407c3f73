// nic_health: what the NIC's driver and firmware said in the kernel log (facts/kernel_log_facts.h)
// about each RDMA device within the sticky window: `failed` on a critical event (firmware fatal
// error, health compromised, recovery aborted, a failed probe or load, a fatal PCIe error),
// `warning` on a warning event (temperature, module and cable errors, command timeouts, non-fatal
// PCIe errors, a link down), `ok` when the log holds neither. Info events (a command a restricted PF
// refused, a cable plugged, corrected PCIe errors) are counted in metrics, never judged here.
#include <algorithm>
#include <chrono>

#include "common/duration_text.h"
#include "core/check.h"
#include "core/topology.h"
#include "facts/kernel_log_facts.h"

namespace rdmahd {
namespace {

// How long an event keeps its verdict: long enough for an alert to fire and a person to look.
constexpr std::int64_t kStickySeconds = 24 * 3600;

std::string FixFor(const KernelEvent& e, const std::string& device) {
  const std::string pci = e.pci_address.empty() ? device : e.pci_address;
  const std::string& n = e.name;
  if (n.find("temperature") != std::string::npos || e.text.find("emperature") != std::string::npos)
    return "check the airflow and the fans at the NIC; read its temperature with `mlxlink -d " + pci +
           " -m` (or `ethtool -m <netdev>` for the module's)";
  if (n.rfind("module_", 0) == 0)
    return "reseat or replace the cable or optic on that port; for a power budget error use a module the NIC "
           "can power (`ethtool -m <netdev>` shows its class)";
  if (n.rfind("aer_", 0) == 0)
    return "reseat the NIC, check its riser and slot (`lspci -vvv -s " + pci +
           "`, the AER counters in /sys/bus/pci/devices/" + pci + "/aer_dev_*); replace it if errors repeat";
  if (n == "command_timeout")
    return "the firmware stopped answering commands: `devlink health show`; a firmware reset "
           "(`devlink dev reload pci/" + pci + "`) or a reboot; update the firmware if it repeats";
  if (n == "link_down") return "see port_active and link_flaps for the port; check the cable and the switch port";
  return "`devlink health show pci/" + pci + "` and `dmesg | grep " + pci +
         "`; reset the firmware (`devlink dev reload pci/" + pci +
         "`) or reboot; if it repeats after a firmware update, RMA the NIC";
}

class NicHealthCheck : public Check {
 public:
  void Evaluate(const Snapshot& snapshot, const Config&, std::vector<CheckResult>& out) const override {
    const auto* facts = snapshot.Get<KernelLogFacts>();
    const auto* topology = snapshot.Get<Topology>();
    if (facts == nullptr || topology == nullptr) return;
    if (!facts->readable) {
      for (const TopologyDevice& d : topology->devices) {
        out.push_back({"", d.name, Verdict::kUnknown, "the kernel log was not read: " + facts->unreadable,
                       facts->unreadable.find("CAP_SYSLOG") != std::string::npos
                           ? "run rdma-healthd with CAP_SYSLOG (the shipped unit and DaemonSet grant it), or set "
                             "kernel.dmesg_restrict=0"
                           : ""});
      }
      return;
    }
    for (const TopologyDevice& d : topology->devices) {
      CheckResult r{"", d.name, Verdict::kOk, "", ""};
      const KernelEvent* worst = nullptr;
      std::size_t judged = 0;
      const auto it = std::find_if(facts->devices.begin(), facts->devices.end(),
                                   [&](const KernelLogDeviceFacts& f) { return f.device == d.name; });
      if (it != facts->devices.end()) {
        for (const KernelEvent& e : it->recent) {  // oldest first: the last of the worst wins
          if (e.severity == KernelEventSeverity::kInfo) continue;
          if (!e.realtime_s || facts->now_unix_s - *e.realtime_s > kStickySeconds) continue;
          ++judged;
          if (!worst || e.severity == KernelEventSeverity::kCritical || worst->severity != KernelEventSeverity::kCritical)
            worst = &e;
        }
      }
      if (worst == nullptr) {
        r.reason = "no NIC health event in the kernel log in the last 24 h";
      } else {
        r.verdict = worst->severity == KernelEventSeverity::kCritical ? Verdict::kFailed : Verdict::kWarning;
        r.reason = worst->name + " " + FormatCoarseDuration(facts->now_unix_s - *worst->realtime_s) + " ago: " +
                   worst->excerpt;
        if (judged > 1) r.reason += " (" + std::to_string(judged) + " events in the last 24 h)";
        r.fix = FixFor(*worst, d.name);
      }
      out.push_back(std::move(r));
    }
  }
};

}  // namespace

RDMAHD_REGISTER_CHECK("nic_health", NicHealthCheck,
                      "the kernel log holds no NIC firmware, thermal, module or PCIe error for the device in 24 h");

}  // namespace rdmahd
