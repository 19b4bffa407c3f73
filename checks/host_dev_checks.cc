// Host readiness checks, device side: pcie_link, roce_tos, kernel_modules,
// device_access, cpu_governor (link_flaps: checks/link_flaps.cc). Facts come from the "pcie",
// "roce_tos" and "plumbing" collectors (facts/*.h); roce_tos also reads the Topology for the port's netdev and
// the "roce" collector's facts for its DSCP->priority map and PFC. Without their facts (collector
// disabled or failed) a check says nothing.
#include <cstdio>
#include <string>
#include <string_view>

#include "config/config_section.h"
#include "core/check.h"
#include "core/topology.h"
#include "facts/pcie_facts.h"
#include "facts/plumbing_facts.h"
#include "facts/roce_facts.h"
#include "facts/roce_tos_facts.h"

namespace rdmahd {
namespace {

std::string Gts(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GT/s", v);
  return buf;
}

std::string Octal(std::uint32_t mode) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04o", mode);
  return buf;
}

CheckResult Result(std::string subject, Verdict v, std::string reason, std::string fix = "") {
  return CheckResult{"", std::move(subject), v, std::move(reason), std::move(fix)};
}

// ---------------------------------------------------------------------------------------------------
class PcieLinkCheck : public Check {
 public:
  void Evaluate(const Snapshot& snapshot, const Config&, std::vector<CheckResult>& out) const override {
    const auto* facts = snapshot.Get<PcieFacts>();
    if (facts == nullptr) return;
    for (const PcieLinkFacts& f : facts->devices) {
      if (!f.pci_function) {
        out.push_back(Result(f.device, Verdict::kUnknown, f.note));
        continue;
      }
      const std::string where = f.pci_address ? " (" + *f.pci_address + ")" : "";
      if (!f.current_speed_gts || !f.max_speed_gts || !f.current_width || !f.max_width) {
        out.push_back(Result(f.device, Verdict::kUnknown, "PCIe link unknown" + where + ": " + f.note));
        continue;
      }
      const std::string now = Gts(*f.current_speed_gts) + " x" + std::to_string(*f.current_width);
      const std::string max = Gts(*f.max_speed_gts) + " x" + std::to_string(*f.max_width);
      const std::string mrrs = f.max_read_request_bytes
                                   ? "MaxReadReq " + std::to_string(*f.max_read_request_bytes) + " bytes, MaxPayload " +
                                         std::to_string(f.max_payload_bytes.value_or(0)) + " bytes"
                                   : "MaxReadReq unknown (" + f.config_note + ")";
      const bool slow_speed = *f.current_speed_gts < *f.max_speed_gts;
      const bool narrow = *f.current_width < *f.max_width;
      if (!slow_speed && !narrow) {
        out.push_back(Result(f.device, Verdict::kOk, "PCIe link " + now + where + " at its maximum; " + mrrs));
        continue;
      }
      const double share = (*f.current_speed_gts * *f.current_width) / (*f.max_speed_gts * *f.max_width);
      std::string what = slow_speed && narrow ? "speed and width" : slow_speed ? "speed" : "width";
      // lspci -s takes the PCI address, which a capture whose device/ is a copied folder (not the
      // kernel's link) does not give: then the fix says where to read it rather than print a guess.
      const std::string lspci =
          f.pci_address ? "`lspci -vv -s " + *f.pci_address + " | grep -E 'LnkCap|LnkSta'`"
                        : "`lspci -vv -s <PCI address> | grep -E 'LnkCap|LnkSta'` (the PCI address of " + f.device +
                              " is not in this tree: on the node it is the name the " +
                              "/sys/class/infiniband/" + f.device + "/device link points to)";
      out.push_back(Result(f.device, Verdict::kFailed,
          "PCIe link trained at " + now + where + ", below the maximum " + max + " (" + what + "): about " +
              std::to_string(static_cast<int>(share * 100 + 0.5)) + "% of the bus bandwidth the NIC needs; " + mrrs,
          "compare " + lspci + "; reseat the adapter in a slot wired for " + max +
              " (check the riser and the BIOS PCIe speed setting), then reboot; a link that retrains "
              "below its capability again points at the slot, riser or card"));
    }
  }
};

// ---------------------------------------------------------------------------------------------------
class RoceTosCheck : public Check {
 public:
  void Evaluate(const Snapshot& snapshot, const Config& config, std::vector<CheckResult>& out) const override {
    const auto* facts = snapshot.Get<RoceTosFacts>();
    if (facts == nullptr) return;
    const auto* topology = snapshot.Get<Topology>();
    const auto* qos = snapshot.Get<RoceQosFacts>();
    for (const RoceTosPortFacts& p : facts->ports) {
      const std::string subject = p.device + "/" + std::to_string(p.port);
      if (!config.Section<RocePolicy>().dscp || !config.Section<RocePolicy>().priority) {
        out.push_back(Result(subject, Verdict::kUnknown,
                             Observed(p) + "; not configured (roce.dscp and roce.priority)",
                             "set roce.dscp and roce.priority in the config file"));
        continue;
      }
      if (!p.effective_tos) {
        out.push_back(Result(subject, Verdict::kUnknown, "default ToS unknown: " + p.note));
        continue;
      }
      const int want_dscp = *config.Section<RocePolicy>().dscp;
      const int prio = *config.Section<RocePolicy>().priority;
      const int dscp = static_cast<int>(*p.effective_tos >> 2);
      if (dscp != want_dscp) {
        out.push_back(Result(subject, Verdict::kFailed,
                             Observed(p) + " = DSCP " + std::to_string(dscp) + ", policy DSCP is " +
                                 std::to_string(want_dscp) + ": rdma_cm traffic is not marked for the lossless class",
                             Fix(p, want_dscp)));
        continue;
      }
      const std::string netdev = NetdevOf(topology, p);
      const RoceNetdevFacts* q = qos != nullptr && !netdev.empty() ? qos->Find(netdev) : nullptr;
      const std::string head = Observed(p) + " = DSCP " + std::to_string(dscp);
      if (q == nullptr) {
        out.push_back(Result(subject, Verdict::kUnknown,
                             head + " as policy; its priority is unknown (" +
                                 (netdev.empty() ? std::string("no netdev known for the port") : "no QoS facts for " + netdev) + ")"));
        continue;
      }
      if (q->trust && *q->trust == TrustMode::kPcp) {
        out.push_back(Result(subject, Verdict::kUnknown,
                             head + " as policy, but " + netdev +
                                 " trusts PCP: the priority comes from the VLAN PCP, not the DSCP (see roce_trust)"));
        continue;
      }
      auto it = q->dscp_priority.find(dscp);
      if (it == q->dscp_priority.end()) {
        out.push_back(Result(subject, Verdict::kFailed,
                             head + " is not mapped to a priority on " + netdev +
                                 " (it falls to the default priority), RoCE priority is " + std::to_string(prio),
                             "dcb app add dev " + netdev + " dscp-prio " + std::to_string(dscp) + ":" + std::to_string(prio)));
        continue;
      }
      if (it->second != prio) {
        out.push_back(Result(subject, Verdict::kFailed,
                             head + " maps to priority " + std::to_string(it->second) + " on " + netdev +
                                 ", RoCE priority is " + std::to_string(prio),
                             "dcb app replace dev " + netdev + " dscp-prio " + std::to_string(dscp) + ":" +
                                 std::to_string(prio)));
        continue;
      }
      if (!q->dcb || !q->dcb->pfc) {
        out.push_back(Result(subject, Verdict::kUnknown,
                             head + " -> priority " + std::to_string(prio) + " on " + netdev + "; PFC state unknown"));
        continue;
      }
      if (!q->dcb->pfc->Enabled(prio)) {
        out.push_back(Result(subject, Verdict::kFailed,
                             head + " -> priority " + std::to_string(prio) + " on " + netdev +
                                 ", but PFC is off there: RoCE traffic is not lossless",
                             "dcb pfc set dev " + netdev + " prio-pfc " + std::to_string(prio) + ":on"));
        continue;
      }
      out.push_back(Result(subject, Verdict::kOk,
                           head + " -> priority " + std::to_string(prio) + " on " + netdev + ", PFC on"));
    }
  }

 private:
  static std::string Observed(const RoceTosPortFacts& p) {
    if (!p.effective_tos) return "default ToS unknown";
    const std::string tos = "default ToS " + std::to_string(*p.effective_tos);
    if (p.traffic_class) return tos + " (tc/" + std::to_string(p.port) + "/traffic_class)";
    switch (p.source) {
      case RoceTosSource::kConfigfs: return tos + " (rdma_cm configfs default_roce_tos)";
      case RoceTosSource::kNoConfigfs:
        return tos + " (kernel default: no /sys/kernel/config/rdma_cm, rdma_cm not loaded or configfs not mounted)";
      case RoceTosSource::kNoDeviceEntry:
        return tos + " (kernel default: no /sys/kernel/config/rdma_cm/" + p.device + ")";
      case RoceTosSource::kUnreadable: break;
    }
    return tos;
  }

  static std::string NetdevOf(const Topology* topology, const RoceTosPortFacts& p) {
    const TopologyDevice* d = topology != nullptr ? topology->FindDevice(p.device) : nullptr;
    if (d == nullptr) return "";
    for (const TopologyPort& port : d->ports) {
      if (port.port == p.port) return port.netdev;
    }
    return "";
  }

  // ToS = DSCP << 2 with the ECN field ECT(0) (NVIDIA's 106 for DSCP 26), so switches can mark
  // congestion instead of dropping.
  static std::string Fix(const RoceTosPortFacts& p, int dscp) {
    const std::string tos = std::to_string((dscp << 2) | 2);
    const std::string n = std::to_string(p.port);
    if (p.traffic_class) {
      return "echo " + tos + " > /sys/class/infiniband/" + p.device + "/tc/" + n + "/traffic_class";
    }
    const std::string dir = "/sys/kernel/config/rdma_cm/" + p.device;
    std::string fix;
    if (p.source == RoceTosSource::kNoConfigfs) {
      fix = "modprobe rdma_cm && (mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config) && ";
    }
    fix += "mkdir -p " + dir + " && echo " + tos + " > " + dir + "/ports/" + n + "/default_roce_tos (or `cma_roce_tos -d " +
           p.device + " -p " + n + " -t " + tos + "`); configfs does not persist: repeat it at boot";
    return fix;
  }
};

// ---------------------------------------------------------------------------------------------------
class KernelModulesCheck : public Check {
 public:
  void Evaluate(const Snapshot& snapshot, const Config&, std::vector<CheckResult>& out) const override {
    const auto* f = snapshot.Get<PlumbingFacts>();
    if (f == nullptr) return;
    for (const ModuleFacts& m : f->modules) {
      if (!f->module_dir_present && !m.loaded) {
        out.push_back(Result(m.name, Verdict::kUnknown,
                             "no /sys/module in this sysfs tree (not captured): module state unknown",
                             "capture /sys/module with the tree, or run on the node"));
      } else if (m.loaded) {
        out.push_back(Result(m.name, Verdict::kOk, "loaded (" + m.evidence + "), needed by " + m.needed_by));
      } else {
        out.push_back(Result(m.name, Verdict::kFailed,
                             "not loaded (" + m.evidence + "), needed by " + m.needed_by,
                             "modprobe " + m.name + " && echo " + m.name +
                                 " >> /etc/modules-load.d/rdma.conf (loads it at boot)"));
      }
    }
  }
};

// ---------------------------------------------------------------------------------------------------
class DeviceAccessCheck : public Check {
 public:
  void Evaluate(const Snapshot& snapshot, const Config&, std::vector<CheckResult>& out) const override {
    const auto* f = snapshot.Get<PlumbingFacts>();
    if (f == nullptr) return;
    if (!f->dev_root_present) {
      out.push_back(Result("/dev", Verdict::kUnknown,
                           "no device node folder beside this sysfs tree (not captured): device nodes unknown",
                           "pass --path.dev=DIR pointing at the node's /dev"));
      return;
    }
    const AccessIdentity& who = f->access;
    const bool configured = !who.user.empty() || !who.group.empty();
    const std::string whom = !configured         ? std::string("everyone (host.device_access not configured)")
                             : !who.user.empty() ? "user " + who.user + (who.group.empty() ? "" : " / group " + who.group)
                                                 : "group " + who.group;
    for (const CharDeviceFacts& c : f->char_devices) {
      const std::string subject = c.path.empty() ? c.device : c.path;
      const std::string module = c.device.empty() ? "rdma_ucm" : "ib_uverbs";
      if ((c.path.empty() || !c.present) && c.settling) {
        out.push_back(Result(subject, Verdict::kUnknown,
                             (c.path.empty() ? c.note : c.path + " missing (" + c.note + ")") + " for under 10 s; " + c.device +
                                 " is being registered or removed: its verbs node follows, judged at the next collection"));
        continue;
      }
      if (c.path.empty() || !c.present) {
        out.push_back(Result(subject, Verdict::kFailed,
                             (c.path.empty() ? c.note : c.path + " missing (" + c.note + ")") +
                                 ": RDMA applications cannot open " + (c.device.empty() ? "rdma_cm" : c.device),
                             "modprobe " + module + "; in a container, pass the device in (--device=" +
                                 (c.path.empty() ? std::string("/dev/infiniband/uverbsN") : c.path) + ")"));
        continue;
      }
      if (!c.is_char_device) {
        out.push_back(Result(subject, Verdict::kFailed, c.path + " is not a character device",
                             "rm " + c.path + " && modprobe -r " + module + " && modprobe " + module));
        continue;
      }
      const std::string mode = "mode " + Octal(*c.mode) + " uid " + std::to_string(*c.uid) + " gid " +
                               std::to_string(*c.gid);
      if (configured && !who.uid && who.gids.empty()) {
        out.push_back(Result(subject, Verdict::kUnknown, mode + "; " + who.note));
        continue;
      }
      if (CanReadWrite(c, who, configured)) {
        out.push_back(Result(subject, Verdict::kOk, mode + ": read-write for " + whom));
        continue;
      }
      std::string fix;
      if (!configured) {
        fix = "chmod 0666 " + c.path + " (the mode the kernel creates it with) and find the udev rule that "
              "changed it, or set host.device_access.user/group to the account RDMA jobs run as";
      } else if (!who.group.empty()) {
        fix = "chgrp " + who.group + " " + c.path + " && chmod g+rw " + c.path +
              "; make it last with a udev rule in /etc/udev/rules.d (GROUP=\"" + who.group + "\", MODE=\"0660\")";
      } else {
        fix = "chmod o+rw " + c.path + ", or add user " + who.user +
              " to the device's group; make it last with a udev rule in /etc/udev/rules.d";
      }
      out.push_back(Result(subject, Verdict::kFailed,
                           mode + ": not read-write for " + whom + " (" + (who.note.empty() ? "" : who.note + "; ") +
                               "RDMA applications get EACCES from ibv_open_device/rdma_create_id)",
                           fix));
    }
  }

 private:
  static bool CanReadWrite(const CharDeviceFacts& c, const AccessIdentity& who, bool configured) {
    const std::uint32_t mode = *c.mode;
    if (!configured) return (mode & 06) == 06;
    if (who.uid && *who.uid == 0) return true;  // root
    if (who.uid && *who.uid == *c.uid) return ((mode >> 6) & 06) == 06;
    for (std::uint32_t g : who.gids) {
      if (g == *c.gid) return ((mode >> 3) & 06) == 06;
    }
    return (mode & 06) == 06;
  }
};

// ---------------------------------------------------------------------------------------------------
class CpuGovernorCheck : public Check {
 public:
  void Evaluate(const Snapshot& snapshot, const Config& config, std::vector<CheckResult>& out) const override {
    const auto* f = snapshot.Get<PlumbingFacts>();
    if (f == nullptr) return;
    for (const CpuGovernorFacts& g : f->governors) {
      std::string seen;
      for (const auto& [name, n] : g.cpus_by_governor) {
        seen += (seen.empty() ? "" : ", ") + name + " on " + std::to_string(n) + " CPUs";
      }
      if (!g.note.empty() || g.cpus_by_governor.empty()) {
        out.push_back(Result(g.device, Verdict::kUnknown,
                             "governor unknown: " + (g.note.empty() ? "no local CPUs" : g.note)));
        continue;
      }
      const std::string head = "local CPUs " + g.local_cpulist + ": " + seen +
                               (g.unreadable_cpus ? ", " + std::to_string(g.unreadable_cpus) + " unreadable" : "");
      if (!config.Section<CpuGovernorPolicy>().governor) {
        out.push_back(Result(g.device, Verdict::kUnknown, head + "; not configured (host.cpu_governor)",
                             "set host.cpu_governor (e.g. performance) in the config file"));
        continue;
      }
      const std::string& want = *config.Section<CpuGovernorPolicy>().governor;
      const auto it = g.cpus_by_governor.find(want);
      const std::uint32_t good = it == g.cpus_by_governor.end() ? 0 : it->second;
      std::uint32_t total = g.unreadable_cpus;
      for (const auto& [name, n] : g.cpus_by_governor) total += n;
      if (good == total) {
        out.push_back(Result(g.device, Verdict::kOk, head));
        continue;
      }
      out.push_back(Result(g.device, Verdict::kWarning,
                           head + "; policy " + want + ": polling and interrupt CPUs that clock down add latency",
                           "cpupower -c " + g.local_cpulist + " frequency-set -g " + want +
                               " (make it last with the distribution's cpufrequtils/tuned profile)"));
    }
  }
};

RDMAHD_REGISTER_CHECK("pcie_link", PcieLinkCheck,
                      "the RDMA device's PCIe link trained at its maximum speed and width");
RDMAHD_REGISTER_CHECK("roce_tos", RoceTosCheck,
                      "the default RoCE ToS carries the policy DSCP, which maps to the PFC-enabled RoCE priority");
RDMAHD_REGISTER_CHECK("kernel_modules", KernelModulesCheck,
                      "ib_core, ib_uverbs, rdma_ucm and each RDMA device's driver module are loaded");
RDMAHD_REGISTER_CHECK("device_access", DeviceAccessCheck,
                      "/dev/infiniband/uverbsN and rdma_cm exist and the configured user/group may open them");
RDMAHD_REGISTER_CHECK("cpu_governor", CpuGovernorCheck,
                      "the CPUs local to each RDMA device run the host.cpu_governor frequency governor");

RDMAHD_REGISTER_CONFIG_SECTION(CpuGovernorPolicy, "host.cpu_governor", 60, {{"host.cpu_governor", "unset"}},
    [](const ConfigWalker& w, const ConfigNode& v, CpuGovernorPolicy& out) {
      return w.ReadOptionalString(v, out.governor);
    });

}  // namespace
}  // namespace rdmahd
