// nic_health: what the NIC's driver and firmware said in the kernel log (facts/kernel_log_facts.h)
// about each RDMA device within the sticky window: `failed` on a critical event (firmware fatal
// error, health compromised, recovery aborted, a failed probe or load, a fatal PCIe error),
// `warning` on a warning event (temperature, module and cable errors, command timeouts, non-fatal
// PCIe errors, a link down), `ok` when the log holds neither. Info events (a command a restricted PF
// refused, a cable plugged, corrected PCIe errors) are counted and named in an ok reason, never
// judged. Each kind of event is judged for the whole window after its last occurrence, whatever
// floods follow it (the collector keeps every kind's run, not a shared list).
//
// An incident is told by its cause, not its last line: the judged kinds in log order, the cause
// the first one that names one (temperature, a module, slot power, a PCIe error, the firmware's
// syndrome) before the first critical event, else the firmware's syndrome, else the first critical
// event, else the first event; the fix is the cause's (then a reset when the device failed), and
// the rest of the chain is listed briefly.
//
// Nothing unread is judged: while records are known to be waiting (a backlog at start, a saved log
// not read to its end) the verdict is unknown, with the progress, unless a critical event was read.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "common/duration_text.h"
#include "core/check.h"
#include "core/topology.h"
#include "facts/kernel_log_facts.h"

namespace rdmahd {
namespace {

constexpr std::int64_t kStickySeconds = KernelLogFacts::kWindowSeconds;
constexpr char kShorterLog[] =
    "save a shorter log: the last 24 h are all nic_health judges (`journalctl -k --since=\"24 hours ago\" -o "
    "short-monotonic > FILE`)";

// What an event says about the cause of an incident.
enum class Cause {
  kTemperature,     // the NIC's sensors, or the firmware's syndrome "High temperature"
  kModule,          // a cable or optic
  kSlotPower,       // the PCIe slot gives too little power
  kPcie,            // an uncorrected PCIe error
  kSyndrome,        // the firmware's own account of its failure (other than temperature)
  kCommandTimeout,  // the firmware stopped answering
  kLink,            // the link went down: a symptom more often than a cause
  kOther,           // fatal error, health compromised, recovery aborted, probe/load failure, a user's rule
};

bool Contains(const std::string& s, std::string_view what) { return s.find(what) != std::string::npos; }

bool IsSyndrome(const KernelEvent& e) { return e.name == "mlx5_health_syndrome" || e.name == "mlx5_health_issue"; }

Cause CauseOf(const KernelEvent& e) {
  const std::string& n = e.name;
  if (n.rfind("module_", 0) == 0) return Cause::kModule;
  if (n == "mlx5_temperature_warning" || (IsSyndrome(e) && Contains(e.text, "emperat"))) return Cause::kTemperature;
  if (IsSyndrome(e)) return Cause::kSyndrome;
  if (n == "pcie_slot_power_insufficient") return Cause::kSlotPower;
  if (n == "aer_fatal" || n == "aer_nonfatal") return Cause::kPcie;
  if (n == "command_timeout") return Cause::kCommandTimeout;
  if (n == "link_down") return Cause::kLink;
  return Cause::kOther;
}

// A cause that explains what follows it (not a symptom of something else).
bool NamesACause(const KernelEvent& e) {
  const Cause c = CauseOf(e);
  return c == Cause::kTemperature || c == Cause::kModule || c == Cause::kSlotPower || c == Cause::kPcie ||
         c == Cause::kSyndrome;
}

// The event in a few words, as a person names it.
std::string Label(const KernelEvent& e) {
  const std::string& n = e.name;
  const auto with = [](std::string words, const std::string& detail) {
    return detail.empty() ? words : words + " (" + detail + ")";
  };
  if (n == "mlx5_temperature_warning") return "high temperature";
  if (n == "mlx5_health_compromised") return "health compromised";
  if (n == "mlx5_fw_fatal") return "fatal error";
  if (n == "mlx5_health_recovery_aborted") return "recovery aborted";
  if (n == "mlx5_health_syndrome") return with("syndrome " + e.number, e.text);
  if (n == "mlx5_health_issue") return with("health issue", e.text);
  if (n == "module_error") return with("module error", e.text);
  if (n == "module_unplugged") return "cable unplugged";
  if (n == "command_timeout") return e.text.empty() ? "command timeout" : e.text + " command timeout";
  if (n == "efa_command_failed") return e.text.empty() ? "command failure" : e.text + " command failure";
  if (n == "probe_failed") return with("probe failed", e.number.empty() ? "" : "error " + e.number);
  if (n == "mlx5_load_failed") return with("load failed", e.number.empty() ? "" : "error " + e.number);
  if (n == "pcie_slot_power_insufficient") return "insufficient PCIe slot power";
  if (n == "aer_fatal") return with("fatal PCIe error", e.text);
  if (n == "aer_nonfatal") return with("non-fatal PCIe error", e.text);
  if (n == "bnxt_fw_fatal_reset") return "firmware fatal reset";
  if (n == "bnxt_fw_reset") return "firmware reset";
  if (n == "link_down") return "link down";
  return n;
}

std::string Reset(const std::string& pci) {
  return "then reset the device (`devlink dev reload pci/" + pci + "`) or reboot";
}

// The fix for the incident's cause; `failed`: the device failed, so a reset follows the cause's fix.
std::string FixFor(const KernelEvent& cause, const std::string& pci, bool failed) {
  const std::string reset = failed ? "; " + Reset(pci) : "";
  switch (CauseOf(cause)) {
    case Cause::kTemperature:
      return "cool the NIC: check the airflow, the fans, the heatsink and the ambient temperature at it "
             "(`mlxlink -d " + pci + " -m` reads its temperature, `ethtool -m <netdev>` the module's)" + reset;
    case Cause::kModule:
      return "reseat or replace the cable or optic on that port; for a power budget error use a module the NIC "
             "can power, for a module's high temperature check the airflow (`ethtool -m <netdev>` shows its "
             "class and temperature)" + reset;
    case Cause::kSlotPower:
      return "the slot gives the NIC too little power: move it to a slot (or riser) that gives it its rated "
             "power, check the riser's power cable (`lspci -vvv -s " + pci + "`)" + reset;
    case Cause::kPcie:
      return "reseat the NIC, check its riser and slot (`lspci -vvv -s " + pci +
             "`, the AER counters in /sys/bus/pci/devices/" + pci + "/aer_dev_*); replace it if errors repeat" + reset;
    case Cause::kCommandTimeout:
      return "the firmware stopped answering commands: `devlink health show`; a firmware reset "
             "(`devlink dev reload pci/" + pci + "`) or a reboot; update the firmware if it repeats";
    case Cause::kLink:
      return "see port_active and link_flaps for the port; check the cable and the switch port" + reset;
    case Cause::kSyndrome:
    case Cause::kOther:
      break;
  }
  return "`devlink health show pci/" + pci + "` and `dmesg | grep " + pci + "`; reset the firmware (`devlink dev reload pci/" +
         pci + "`) or reboot; if it repeats after a firmware update, RMA the NIC";
}

std::string Grouped(std::uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// "40 ACCESS_REG command failures (informational: ...)": an info kind, as the ok reason names it.
std::string InfoPhrase(const KernelEventCount& k) {
  const KernelEvent& e = k.last;
  const std::uint64_t n = k.run_count;
  const auto noun = [n](const std::string& one, const std::string& many) {
    return Grouped(n) + " " + (n == 1 ? one : many);
  };
  if (e.name == "command_failed") {
    const std::string cmd = e.text.empty() ? "" : e.text + " ";
    return noun(cmd + "command failure", cmd + "command failures") +
           (e.text == "ACCESS_REG" ? " (informational: a restricted PF refuses register access)" : " (informational)");
  }
  if (e.name == "module_plugged") return noun("cable plugged in", "cables plugged in");
  if (e.name == "link_up") return noun("link up event", "link up events");
  if (e.name.rfind("aer_", 0) == 0) return noun("corrected PCIe error line", "corrected PCIe error lines") + " (pcie_aer judges the counters)";
  return noun(e.name + " event", e.name + " events") + " (informational)";
}

struct Judged {
  const KernelEventCount* kind;
  KernelEventSeverity severity;
};

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
    for (const TopologyDevice& d : topology->devices) out.push_back(Judge(*facts, d));
  }

 private:
  static bool InWindow(const KernelLogFacts& facts, const KernelEvent& e) {
    return e.realtime_s && facts.now_unix_s - *e.realtime_s <= kStickySeconds;
  }

  // "kernel log read to record 100,000 of more (38% of FILE); unread records not judged".
  static std::string Unread(const KernelLogFacts& facts) {
    std::string where;
    if (facts.bytes_read && facts.bytes_total && *facts.bytes_total > 0) {
      where = " (" + std::to_string(*facts.bytes_read * 100 / *facts.bytes_total) + "% of " + facts.source + ")";
    } else {
      where = " (" + facts.source + "'s backlog: the next collections read on)";
    }
    return "kernel log read to record " + Grouped(facts.records) + " of more" + where + "; unread records not judged";
  }

  static CheckResult Judge(const KernelLogFacts& facts, const TopologyDevice& d) {
    CheckResult r{"", d.name, Verdict::kOk, "", ""};
    std::vector<Judged> judged;                  // warning and critical kinds, in log order
    std::vector<const KernelEventCount*> infos;  // info kinds, in log order
    const auto it = std::find_if(facts.devices.begin(), facts.devices.end(),
                                 [&](const KernelLogDeviceFacts& f) { return f.device == d.name; });
    if (it != facts.devices.end()) {
      for (const auto& [key, k] : it->counts) {
        if (k.run_count == 0 || !InWindow(facts, k.last)) continue;
        if (k.last.severity == KernelEventSeverity::kInfo) {
          infos.push_back(&k);
        } else {
          judged.push_back({&k, k.last.severity});
        }
      }
    }
    const auto by_first = [](const KernelEventCount* a, const KernelEventCount* b) { return a->first_order < b->first_order; };
    std::sort(judged.begin(), judged.end(), [&](const Judged& a, const Judged& b) { return by_first(a.kind, b.kind); });
    std::sort(infos.begin(), infos.end(), by_first);

    if (judged.empty()) {
      if (!facts.caught_up) {
        r.verdict = Verdict::kUnknown;
        r.reason = Unread(facts);
        if (facts.bytes_total) r.fix = kShorterLog;
        return r;
      }
      if (infos.empty()) {
        r.reason = "no NIC health event in the kernel log in the last 24 h";
        return r;
      }
      std::string seen;
      for (std::size_t i = 0; i < infos.size() && i < 4; ++i) seen += (i ? ", " : "") + InfoPhrase(*infos[i]);
      if (infos.size() > 4) seen += ", " + std::to_string(infos.size() - 4) + " other kinds";
      r.reason = seen + "; no health event (warning or critical) in the last 24 h";
      return r;
    }

    const Judged* first_critical = nullptr;
    for (const Judged& j : judged) {
      if (j.severity == KernelEventSeverity::kCritical) {
        first_critical = &j;
        break;
      }
    }
    const std::uint64_t before = first_critical ? first_critical->kind->first_order : UINT64_MAX;
    const Judged* cause = nullptr;
    for (const Judged& j : judged) {
      if (j.kind->first_order <= before && NamesACause(j.kind->first)) {
        cause = &j;
        break;
      }
    }
    for (const Judged& j : judged) {  // the firmware's syndrome, printed just after the failure it explains
      if (cause == nullptr && IsSyndrome(j.kind->first)) cause = &j;
    }
    if (cause == nullptr) cause = first_critical ? first_critical : &judged.front();

    const bool failed = first_critical != nullptr;
    const KernelEvent& c = cause->kind->first;
    r.verdict = failed ? Verdict::kFailed : Verdict::kWarning;
    r.reason = Label(c) + " " + FormatCoarseDuration(facts.now_unix_s - *c.realtime_s) + " ago (" + c.name +
               (cause->kind->run_count > 1 ? ", " + Grouped(cause->kind->run_count) + " times" : "") + "): " + c.excerpt;
    std::vector<std::string> earlier, then;
    for (const Judged& j : judged) {
      if (&j == cause) continue;
      std::vector<std::string>& list = j.kind->first_order < cause->kind->first_order ? earlier : then;
      const std::string label = Label(j.kind->first);
      if (std::find(list.begin(), list.end(), label) == list.end()) list.push_back(label);
    }
    const auto join = [](const std::vector<std::string>& v) {
      std::string s;
      for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
      return s;
    };
    if (!then.empty()) r.reason += "; then: " + join(then);
    if (!earlier.empty()) r.reason += "; before it: " + join(earlier);
    std::uint64_t events = 0;
    std::int64_t oldest = facts.now_unix_s;
    for (const Judged& j : judged) {
      events += j.kind->run_count;
      oldest = std::min(oldest, *j.kind->first.realtime_s);
    }
    if (events > 1) {
      r.reason += " (" + Grouped(events) + " events " +
                  (facts.now_unix_s - oldest <= kStickySeconds ? std::string("in the last 24 h")
                                                               : "since " + FormatCoarseDuration(facts.now_unix_s - oldest) + " ago") +
                  ")";
    }
    const std::string pci = !c.pci_address.empty() ? c.pci_address : d.pci_address.value_or(d.name);
    r.fix = FixFor(c, pci, failed);
    if (!facts.caught_up) {
      if (failed) {
        r.reason += "; " + Unread(facts);
      } else {  // a warning read so far may hide a critical event not read yet
        r.verdict = Verdict::kUnknown;
        r.reason = Unread(facts) + "; read so far: " + r.reason;
      }
    }
    return r;
  }
};

}  // namespace

RDMAHD_REGISTER_CHECK("nic_health", NicHealthCheck,
                      "the kernel log holds no NIC firmware, thermal, module or PCIe error for the device in 24 h");

}  // namespace rdmahd
