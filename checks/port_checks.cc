// Port checks over the "devices" collector's port facts (each port whole: state, rate, link layer,
// GIDs, netdev): port_active, port_rate, roce_v2_gid.
// One verdict per port (subject "mlx5_0/1"), or one for a device whose ports could not be listed
// (subject "mlx5_0"); ports of filtered-out devices are never seen here.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "common/duration_text.h"
#include "common/parse.h"
#include "config/config_section.h"
#include "core/check.h"
#include "core/topology.h"
#include "facts/rdma_device_facts.h"
#include "facts/read_backoff_reason.h"

namespace rdmahd {
namespace {

// The texts below are built for every port on every scrape: appended into one string rather than
// chained out of temporaries.

// "ACTIVE (4)", or "unreadable".
void AppendDescribe(std::string& out, const std::optional<SysfsEnumValue>& v) {
  if (!v) {
    out += "unreadable";
    return;
  }
  out += v->name;
  out += " (";
  out += std::to_string(v->id);
  out += ')';
}

// "100", "2.5", "14.0625": Gb/s without trailing zeros.
std::string FormatGbps(double gbps) {
  // Whole rates (nearly all) without printf: "%.4f" of a whole number, trailing zeros stripped, is
  // the integer.
  if (gbps >= 0 && gbps < 1e15 && gbps == static_cast<double>(static_cast<long long>(gbps))) {
    return std::to_string(static_cast<long long>(gbps));
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", gbps);
  std::string s = buf;
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

// " (netdev X)" when the port has one.
void AppendLinkHint(std::string& out, const TopologyPort& t) {
  if (t.netdev.empty()) return;
  out += " (netdev ";
  out += t.netdev;
  out += ')';
}

std::string NetdevOrPlaceholder(const TopologyPort& t) { return t.netdev.empty() ? std::string("<netdev>") : t.netdev; }

// Calls `fn(port)` for every port the devices collector saw (each port whole: its Topology part
// with its state, rate and counters); returns false (and appends nothing) when the collector did
// not run, so a disabled collector does not produce a wall of "unknown".
template <class Fn>
bool ForEachPort(const Snapshot& snapshot, Fn&& fn) {
  const auto* facts = snapshot.Get<RdmaDevicesFacts>();
  if (facts == nullptr) return false;
  for (const RdmaDeviceFacts& d : facts->devices) {
    for (const RdmaPortFacts& p : d.ports) fn(p);
  }
  return true;
}

// A device whose ports could not be listed (its folder unreadable): one unknown verdict with the
// reason, subject the device, so that its ports do not silently drop out of the check.
void AppendUnlistedPorts(const Snapshot& snapshot, std::vector<CheckResult>& out) {
  const auto* facts = snapshot.Get<RdmaDevicesFacts>();
  if (facts == nullptr) return;
  for (const RdmaDeviceFacts& d : facts->devices) {
    if (!d.ports_unreadable || !d.ports.empty()) continue;
    out.push_back(CheckResult{"", d.name, Verdict::kUnknown,
                              "ports unknown, none could be listed: " + *d.ports_unreadable,
                              "make /sys/class/infiniband/" + d.name + "/ and its ports/ folder readable by the user "
                              "rdma-healthd runs as (`ls -ld /sys/class/infiniband/" + d.name + "/`)"});
  }
}

class PortActiveCheck : public Check {
 public:
  void Evaluate(const Snapshot& snapshot, const Config& config, std::vector<CheckResult>& out) const override {
    if (!config.Section<PortPolicy>().require_active) return;
    AppendUnlistedPorts(snapshot, out);
    ForEachPort(snapshot, [&](const RdmaPortFacts& p) {
      CheckResult r{"", p.Subject(), Verdict::kUnknown, "", ""};
      std::string observed = "state ";
      AppendDescribe(observed, p.state);
      observed += ", physical state ";
      AppendDescribe(observed, p.phys_state);
      AppendLinkHint(observed, p);
      if (!p.state || !p.phys_state) {
        r.reason = observed + ": cannot tell whether the port is up";
        r.fix = "check that /sys/class/infiniband/" + p.device + "/ports/" + std::to_string(p.port) +
                "/state and phys_state are readable by rdma-healthd";
        const std::string backoff = BackedOffReason(p.read_backoff, [&](const std::string& f) {
          return (f == "state" && !p.state) || (f == "phys_state" && !p.phys_state);
        });
        if (!backoff.empty()) r.reason += ": " + backoff;
      } else if (p.state->id == kPortStateActive && p.phys_state->id == kPhysStateLinkUp) {
        r.verdict = Verdict::kOk;
        r.reason = std::move(observed);
      } else {
        r.verdict = Verdict::kFailed;
        r.reason = observed + "; expected ACTIVE (4) and LinkUp (5)";
        r.fix = FixFor(p);
      }
      out.push_back(std::move(r));
    });
  }

 private:
  static std::string FixFor(const RdmaPortFacts& p) {
    const std::string show = "`rdma link show " + p.Subject() + "`";
    const std::uint32_t phys = p.phys_state->id;
    if (phys == kPhysStateLinkUp) {
      // Physical link is up but the logical port is not ACTIVE.
      if (p.IsEthernet()) {
        return "link is up but the port is not ACTIVE: bring the netdev up (`ip link set " +
               NetdevOrPlaceholder(p) + " up`) and check " + show;
      }
      return "physical link is up but the port is not ACTIVE: a subnet manager must configure it; check "
             "that opensm (or the switch SM) runs on this fabric (`sminfo`, `ibstat`), then " + show;
    }
    if (phys == 3) {  // Disabled
      // ibportstate acts on a LID's port; -D 0 is the local node by direct route, so this needs no LID.
      const std::string port = std::to_string(p.port);
      const std::string ib = "`ibportstate -C " + p.device + " -P " + port + " -D 0 " + port + " enable`";
      const std::string roce = "`ip link set " + NetdevOrPlaceholder(p) + " up`";
      const std::string enable = p.IsEthernet() ? roce : p.link_layer ? ib : roce + " for RoCE, " + ib + " for InfiniBand";
      return "the port is disabled: enable it (" + enable + ") and check the switch port is not shut down; " + show;
    }
    if (phys == 2) {  // Polling: no link partner
      return "no link partner: check the cable/transceiver and that the switch port is up and configured "
             "for this speed; " + show + ", `ethtool " +
             NetdevOrPlaceholder(p) + "` for the negotiated link";
    }
    return "check the cable/switch port and the link training; " + show;
  }
};
RDMAHD_REGISTER_CHECK("port_active", PortActiveCheck,
                      "RDMA port state is ACTIVE and its physical state LinkUp");

class PortRateCheck : public Check {
 public:
  void Evaluate(const Snapshot& snapshot, const Config& config, std::vector<CheckResult>& out) const override {
    AppendUnlistedPorts(snapshot, out);
    ForEachPort(snapshot, [&](const RdmaPortFacts& p) {
      CheckResult r{"", p.Subject(), Verdict::kUnknown, "", ""};
      if (!p.rate_bytes_per_second) {
        r.reason = "rate unreadable";
        AppendLinkHint(r.reason, p);
        const std::string backoff = BackedOffReason(p.read_backoff, [](const std::string& f) { return f == "rate"; });
        if (!backoff.empty()) r.reason += ": " + backoff;
        r.fix = "check that /sys/class/infiniband/" + p.device + "/ports/" + std::to_string(p.port) +
                "/rate is readable by rdma-healthd";
        out.push_back(std::move(r));
        return;
      }
      const double gbps = static_cast<double>(*p.rate_bytes_per_second) * 8 / 1e9;
      std::string observed = "rate ";
      observed += FormatGbps(gbps);
      observed += " Gb/s";
      AppendLinkHint(observed, p);
      if (!config.Section<PortPolicy>().min_rate_gbps) {
        observed += "; no minimum configured (ports.min_rate_gbps)";
        r.reason = std::move(observed);
        r.fix = "set ports.min_rate_gbps in the config to the rate this node's links must train at";
      } else if (!p.state || p.state->id != kPortStateActive) {
        // A port that is not up reports a default rate; port_active already says what is wrong.
        r.reason = observed + " while the port is " + (p.state ? p.state->name : std::string("in an unknown state")) +
                   ": the rate is only meaningful on an ACTIVE port (see port_active)";
        if (!p.state) {
          const std::string backoff = BackedOffReason(p.read_backoff, [](const std::string& f) { return f == "state"; });
          if (!backoff.empty()) r.reason += "; " + backoff;
        }
      } else if (gbps + 1e-9 < *config.Section<PortPolicy>().min_rate_gbps) {
        r.verdict = Verdict::kFailed;
        r.reason = observed + " is below the minimum " + FormatGbps(*config.Section<PortPolicy>().min_rate_gbps) + " Gb/s";
        r.fix = "the link trained at a lower speed or width: check cable/transceiver type and seating, the switch "
                "port speed setting, and `ethtool " + NetdevOrPlaceholder(p) +
                "` / `ibstat " + p.device + " " + std::to_string(p.port) + "` for the active speed and width";
      } else {
        r.verdict = Verdict::kOk;
        observed += " >= minimum ";
        observed += FormatGbps(*config.Section<PortPolicy>().min_rate_gbps);
        observed += " Gb/s";
        r.reason = std::move(observed);
      }
      out.push_back(std::move(r));
    });
  }
};
RDMAHD_REGISTER_CHECK("port_rate", PortRateCheck,
                      "RDMA port link rate is at least the policy minimum (ports.min_rate_gbps)");

// The kernel fills a new RoCE device's GID table from its netdev's addresses just after the device
// registers (rxe: about half a second after `rdma link add`), so a port of a device that appeared
// while the daemon ran, seen with no RoCE v2 GID in its first seconds, is the device coming up, not
// a fault: unknown for kNewDeviceGrace, then judged. A device present at the daemon's first
// collection (and every device `check` sees) is judged at once. "Appeared" is read from the
// history: the collection a device's generation (core/topology.h: it changes when the device is
// created anew under the same name) was first recorded at, against the daemon's first collection.
constexpr auto kNewDeviceGrace = std::chrono::seconds(10);

class RoceV2GidCheck : public Check {
 public:
  void Record(const Snapshot& snapshot, const Config& config, History& history, History::TimePoint now) const override {
    if (!config.Section<PortPolicy>().require_roce_v2_gid) return;
    const auto* topology = snapshot.Get<Topology>();
    if (topology == nullptr) return;
    history.RecordGauge(kCollected, 1, now);
    for (const TopologyDevice& d : topology->devices) {
      if (std::any_of(d.ports.begin(), d.ports.end(), [](const TopologyPort& p) { return p.IsEthernet(); })) {
        history.RecordGauge(SeriesOf(d.name), d.generation, now);
      }
    }
  }

  void EvaluateOverTime(const CheckContext& ctx, std::vector<CheckResult>& out) const override {
    if (!ctx.config.Section<PortPolicy>().require_roce_v2_gid) return;
    AppendUnlistedPorts(ctx.snapshot, out);
    const std::vector<History::Sample> collected = ctx.history.Samples(kCollected);
    ForEachPort(ctx.snapshot, [&](const RdmaPortFacts& p) {
      if (!p.IsEthernet()) return;  // InfiniBand ports have no RoCE GIDs
      CheckResult r = Judge(p);
      if (r.verdict == Verdict::kFailed && !collected.empty()) {
        // The newest sample of the device's generation: when this incarnation of it was first seen.
        if (auto seen = ctx.history.Samples(SeriesOf(p.device)); !seen.empty()) {
          const History::TimePoint appeared = seen.back().first;
          const auto age = ctx.now - appeared;
          if (appeared > collected.front().first && age < kNewDeviceGrace) {
            r.verdict = Verdict::kUnknown;
            r.reason = p.device + " appeared " + FormatSeconds(std::chrono::duration<double>(age).count()) +
                       " ago and its GID table is still being filled (" + r.reason +
                       "): judged once it is " + std::to_string(kNewDeviceGrace.count()) + " s old";
            r.fix.clear();
          }
        }
      }
      out.push_back(std::move(r));
    });
  }

 private:
  static constexpr const char* kCollected = "roce_v2_gid/collected";
  static std::string SeriesOf(const std::string& device) { return "roce_v2_gid/device/" + device; }

  static CheckResult Judge(const RdmaPortFacts& p) {
    CheckResult r{"", p.Subject(), Verdict::kUnknown, "", ""};
    const std::string netdev = NetdevOrPlaceholder(p);
    if (!p.roce_v2_gid_count) {
      r.reason = "GID table unreadable";
      AppendLinkHint(r.reason, p);
      r.fix = "check that /sys/class/infiniband/" + p.device + "/ports/" + std::to_string(p.port) +
              "/gids is readable by rdma-healthd";
    } else if (*p.roce_v2_gid_count == 0) {
      r.verdict = Verdict::kFailed;
      r.reason = "no GID of type RoCE v2 (" + std::to_string(p.gids.size()) + " non-empty GIDs" +
                 (p.netdev.empty() ? std::string(", no netdev bound") : ", netdev " + p.netdev) + ")";
      r.fix = "RoCE v2 GIDs are made from the netdev's IP addresses: bring " + netdev + " up and give it an "
              "address (`ip link set " + netdev + " up`, `ip addr add <ip>/<len> dev " + netdev +
              "`); check that `rdma link show " + p.Subject() + "` names the netdev and list the table with "
              "`show_gids " + p.device + "`";
    } else {
      r.verdict = Verdict::kOk;
      r.reason = std::to_string(*p.roce_v2_gid_count);
      r.reason += " RoCE v2 GIDs";
      AppendLinkHint(r.reason, p);
    }
    return r;
  }
};
RDMAHD_REGISTER_CHECK("roce_v2_gid", RoceV2GidCheck,
                      "Ethernet (RoCE) ports have at least one GID of type RoCE v2");

// An InfiniBand MTU (what ibv_query_port's active_mtu can be): 256, 512, 1024, 2048 or 4096. A
// netdev MTU (1500, 4200, 9000) is the usual slip: it belongs in roce.min_mtu.
Status ReadIbMtu(const ConfigWalker& w, const ConfigNode& v, std::optional<int>& out) {
  if (v.node.IsNull()) return Status::Ok();
  std::optional<std::int64_t> n = v.node.IsScalar() ? ParseI64(v.node.Scalar()) : std::nullopt;
  if (!n || (*n != 256 && *n != 512 && *n != 1024 && *n != 2048 && *n != 4096)) {
    std::string hint;
    if (n && *n > 4096) hint = " (that looks like a netdev MTU; it belongs in roce.min_mtu)";
    return w.FailAt(v, "must be an RDMA MTU: 256, 512, 1024, 2048 or 4096, got " + ConfigWalker::Describe(v.node) + hint);
  }
  out = static_cast<int>(*n);
  return Status::Ok();
}

// ports: these checks' policy, and port_active_mtu's (checks/verbs_checks.cc).
RDMAHD_REGISTER_CONFIG_SECTION(PortPolicy, "ports", 10,
    {{"ports.require_active", "`true`"}, {"ports.min_rate_gbps", "unset"},
     {"ports.require_roce_v2_gid", "`true`"}, {"ports.min_active_mtu", "unset"}},
    [](const ConfigWalker& w, const ConfigNode& v, PortPolicy& out) {
      return w.VisitMap(v, {
          {"require_active", [&](const ConfigNode& f) { return w.ReadBool(f, out.require_active); }},
          {"min_rate_gbps", [&](const ConfigNode& f) { return w.ReadRateGbps(f, out.min_rate_gbps); }},
          {"require_roce_v2_gid", [&](const ConfigNode& f) { return w.ReadBool(f, out.require_roce_v2_gid); }},
          {"min_active_mtu", [&](const ConfigNode& f) { return ReadIbMtu(w, f, out.min_active_mtu); }},
      });
    });

}  // namespace
}  // namespace rdmahd
