// Checks over the "verbs" collector's facts: port_active_mtu (ibv_query_port active_mtu against
// ports.min_active_mtu) and device_limits (ibv_query_device against limits.*). The link layer and
// netdev of a port come from the Topology, the netdev's current MTU from "netdev" when it ran. Verbs facts exist only on a live system (the collector does not query libibverbs
// against a fixture tree): without them these checks say nothing.
#include <string>

#include "config/config_section.h"
#include "core/check.h"
#include "core/topology.h"
#include "facts/netdev_facts.h"
#include "facts/verbs_facts.h"

namespace rdmahd {
namespace {

constexpr std::uint32_t kVerbsPortActive = 4;  // IBV_PORT_ACTIVE
// Netdev MTU that carries a RoCE MTU m: m plus the largest per-packet overhead a RoCE driver
// subtracts (Ethernet-to-RoCE headers, ~80-96 bytes), rounded up: 4096 -> 4200, the usual advice.
constexpr std::uint32_t kRoceMtuOverhead = 104;

const TopologyPort* FindSysfsPort(const Snapshot& snapshot, const std::string& device, std::uint32_t port) {
  const auto* topology = snapshot.Get<Topology>();
  const TopologyDevice* d = topology ? topology->FindDevice(device) : nullptr;
  if (d == nullptr) return nullptr;
  for (const TopologyPort& p : d->ports) {
    if (p.port == port) return &p;
  }
  return nullptr;
}

std::string StateName(std::uint32_t state) {
  switch (state) {
    case 1: return "DOWN";
    case 2: return "INIT";
    case 3: return "ARMED";
    case 4: return "ACTIVE";
    case 5: return "ACTIVE_DEFER";
    default: return "state " + std::to_string(state);
  }
}

class PortActiveMtuCheck : public Check {
 public:
  void Evaluate(const Snapshot& snapshot, const Config& config, std::vector<CheckResult>& out) const override {
    const auto* verbs = snapshot.Get<VerbsFacts>();
    if (verbs == nullptr || !verbs->queried) return;
    const auto* netdevs = snapshot.Get<RdmaNetdevFacts>();
    for (const VerbsDeviceFacts& d : verbs->devices) {
      for (const VerbsPortAttrs& p : d.ports) {
        const std::string subject = d.name + "/" + std::to_string(p.port);
        CheckResult r{"", subject, Verdict::kUnknown, "", ""};
        const TopologyPort* sysfs = FindSysfsPort(snapshot, d.name, p.port);
        const std::string netdev = sysfs != nullptr ? sysfs->netdev : "";
        std::string observed = "active MTU " + (p.active_mtu_bytes ? std::to_string(*p.active_mtu_bytes)
                                                                    : std::string("unknown"));
        if (p.max_mtu_bytes) observed += " (port maximum " + std::to_string(*p.max_mtu_bytes) + ")";
        std::optional<std::int64_t> netdev_mtu;
        if (!netdev.empty()) {
          observed += ", netdev " + netdev;
          if (netdevs != nullptr) {
            if (const NetdevFacts* n = netdevs->Find(netdev); n != nullptr && n->mtu) {
              netdev_mtu = n->mtu;
              observed += " MTU " + std::to_string(*n->mtu);
            }
          }
        }
        if (!config.Section<PortPolicy>().min_active_mtu) {
          r.reason = observed + "; not configured (ports.min_active_mtu)";
          r.fix = "set ports.min_active_mtu in the config (4096 for a lossless RoCE fabric with netdev MTU >= 4200)";
        } else if (!p.active_mtu_bytes) {
          r.reason = observed + ": the device reported an active MTU outside 256..4096";
        } else if (p.state != kVerbsPortActive) {
          r.reason = observed + " while the port is " + StateName(p.state) +
                     ": the active MTU is only meaningful on an ACTIVE port (see port_active)";
        } else if (*p.active_mtu_bytes < static_cast<std::uint32_t>(*config.Section<PortPolicy>().min_active_mtu)) {
          const auto want = static_cast<std::uint32_t>(*config.Section<PortPolicy>().min_active_mtu);
          r.verdict = Verdict::kFailed;
          r.reason = observed + " is below the minimum " + std::to_string(want);
          r.fix = FixFor(d.name, p, want, sysfs, netdev, netdev_mtu);
        } else {
          r.verdict = Verdict::kOk;
          r.reason = observed + " >= minimum " + std::to_string(*config.Section<PortPolicy>().min_active_mtu);
        }
        out.push_back(std::move(r));
      }
    }
  }

 private:
  static std::string FixFor(const std::string& device, const VerbsPortAttrs& p, std::uint32_t want,
                            const TopologyPort* sysfs, const std::string& netdev,
                            std::optional<std::int64_t> netdev_mtu) {
    if (p.max_mtu_bytes && *p.max_mtu_bytes < want) {
      return "the port supports at most " + std::to_string(*p.max_mtu_bytes) +
             " bytes: lower ports.min_active_mtu for this device, or use a device that supports " +
             std::to_string(want);
    }
    const bool infiniband = sysfs != nullptr && sysfs->link_layer && *sysfs->link_layer == "InfiniBand";
    if (infiniband) {
      return "on InfiniBand the active MTU is the smaller of the port's and the partition's/switch's: set "
             "mtu in the subnet manager's partition configuration (opensm partitions.conf, mtu=5 for 4096) "
             "and check the switch port, then `ibv_devinfo -d " + device + "`";
    }
    const std::uint32_t need = want + kRoceMtuOverhead;
    const std::string dev = netdev.empty() ? std::string("<netdev>") : netdev;
    std::string fix = "RoCE derives the active MTU from the netdev MTU: raise it to >= " + std::to_string(need) +
                      " (`ip link set dev " + dev + " mtu " + std::to_string(need) + "`";
    if (netdev_mtu) fix += ", now " + std::to_string(*netdev_mtu);
    fix += "), persist it in the network configuration, and make sure every switch port on the path "
           "carries that MTU";
    return fix;
  }
};
RDMAHD_REGISTER_CHECK("port_active_mtu", PortActiveMtuCheck,
                      "RDMA port active MTU (ibv_query_port) is at least ports.min_active_mtu");

class DeviceLimitsCheck : public Check {
 public:
  void Evaluate(const Snapshot& snapshot, const Config& config, std::vector<CheckResult>& out) const override {
    const auto* verbs = snapshot.Get<VerbsFacts>();
    if (verbs == nullptr || !verbs->queried) return;
    const DeviceLimitsPolicy& policy = config.Section<DeviceLimitsPolicy>();
    for (const VerbsDeviceFacts& d : verbs->devices) {
      CheckResult r{"", d.name, Verdict::kUnknown, "", ""};
      struct Limit {
        const char* name;
        std::uint64_t value;
        const std::optional<std::uint64_t>& min;
      };
      const Limit limits[] = {
          {"max_qp", d.attrs.max_qp, policy.min_max_qp},
          {"max_cq", d.attrs.max_cq, policy.min_max_cq},
          {"max_cqe", d.attrs.max_cqe, policy.min_max_cqe},
          {"max_mr", d.attrs.max_mr, policy.min_max_mr},
          {"max_mr_size", d.attrs.max_mr_size, policy.min_max_mr_size},
      };
      std::string observed;
      for (const Limit& l : limits) {
        observed += (observed.empty() ? "" : ", ") + std::string(l.name) + " " + std::to_string(l.value);
      }
      if (!policy.any()) {
        r.reason = observed +
                   "; not configured (limits.min_max_qp, min_max_cq, min_max_cqe, min_max_mr, min_max_mr_size)";
        r.fix = "set the minimums your jobs need under limits: in the config";
        out.push_back(std::move(r));
        continue;
      }
      std::string below;
      for (const Limit& l : limits) {
        if (l.min && l.value < *l.min) {
          below += (below.empty() ? "" : ", ") + std::string(l.name) + " " + std::to_string(l.value) +
                   " < " + std::to_string(*l.min);
        }
      }
      if (below.empty()) {
        r.verdict = Verdict::kOk;
        r.reason = observed + " meet the configured minimums";
      } else {
        r.verdict = Verdict::kFailed;
        r.reason = "below policy: " + below;
        r.fix = "the device (or its firmware/driver profile) offers less than jobs on this node need: an SR-IOV "
                "VF gets a share of the PF's resources, so check the VF/firmware resource configuration with the "
                "vendor tool; compare with `ibv_devinfo -v -d " + d.name +
                "`; otherwise schedule such jobs on nodes with larger devices or lower the limits.* minimums";
      }
      out.push_back(std::move(r));
    }
    // Listed by libibverbs but not opened: the limits are unknown, never ok or below policy.
    for (const VerbsUnopenedDevice& d : verbs->unopened) {
      out.push_back(CheckResult{"", d.name, Verdict::kUnknown,
                                "device limits unknown: " + d.reason,
                                "make /dev/infiniband/uverbs* of " + d.name +
                                    " accessible to rdma-healthd (see the device_access check; in a container, "
                                    "pass the devices in) and look for driver errors in `dmesg`"});
    }
  }
};
RDMAHD_REGISTER_CHECK("device_limits", DeviceLimitsCheck,
                      "RDMA device limits (ibv_query_device max_qp, max_cq, max_cqe, max_mr, max_mr_size) meet the limits.* minimums");

RDMAHD_REGISTER_CONFIG_SECTION(DeviceLimitsPolicy, "limits", 20,
    {{"limits.min_max_qp", "unset"}, {"limits.min_max_cq", "unset"}, {"limits.min_max_cqe", "unset"},
     {"limits.min_max_mr", "unset"}, {"limits.min_max_mr_size", "unset"}},
    [](const ConfigWalker& w, const ConfigNode& v, DeviceLimitsPolicy& out) {
      return w.VisitMap(v, {
          {"min_max_qp", [&](const ConfigNode& f) { return w.ReadCount(f, out.min_max_qp); }},
          {"min_max_cq", [&](const ConfigNode& f) { return w.ReadCount(f, out.min_max_cq); }},
          {"min_max_cqe", [&](const ConfigNode& f) { return w.ReadCount(f, out.min_max_cqe); }},
          {"min_max_mr", [&](const ConfigNode& f) { return w.ReadCount(f, out.min_max_mr); }},
          {"min_max_mr_size", [&](const ConfigNode& f) { return w.ReadCount(f, out.min_max_mr_size); }},
      });
    });

}  // namespace
}  // namespace rdmahd
