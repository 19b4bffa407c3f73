#include "checks/error_rate_subjects.h"

#include <map>

#include "core/topology.h"
#include "facts/ethtool_std_stats_facts.h"
#include "facts/netdev_facts.h"
#include "facts/rdma_device_facts.h"

namespace rdmahd::error_rates {
namespace {

// The ports of the devices collector's facts as subjects of `check`, with the device's generation
// as the counters' instance; `hw`: their hw_counters (then counters/, for the packet counts).
void ForEachPort(const Snapshot& snapshot, std::string_view check, bool hw, const SubjectFn& fn) {
  const auto* devices = snapshot.Get<RdmaDevicesFacts>();
  if (devices == nullptr) return;
  const auto* topology = snapshot.Get<Topology>();
  std::map<std::string_view, std::uint64_t> generation;
  if (topology != nullptr) {
    for (const TopologyDevice& d : topology->devices) generation[d.name] = d.generation;
  }
  for (const RdmaDeviceFacts& d : devices->devices) {
    const auto g = generation.find(d.name);
    for (const RdmaPortFacts& p : d.ports) {
      Subject s;
      s.name = p.Subject();
      s.check = check;
      s.instance = g == generation.end() ? 0 : g->second;
      s.counters = hw ? &p.hw_counters : &p.counters;
      s.fallback = hw ? &p.counters : nullptr;
      s.netdev = p.netdev;
      s.backoff = &p.read_backoff;
      s.unparseable = &p.unparseable;
      s.backoff_dirs = hw ? std::array<std::string_view, 2>{"hw_counters/", "counters/"}
                          : std::array<std::string_view, 2>{"counters/", "counters/"};
      fn(s);
    }
  }
}

// A standard statistic that counts what a driver statistic counts (mlx5 reports the same PPCNT
// registers both ways): hidden where the driver has the latter, so an error counts once.
constexpr std::array<std::pair<std::string_view, std::string_view>, 4> kStandardTwins = {{
    {"eth-phy-SymbolErrorDuringCarrier", "rx_symbol_err_phy"},
    {"eth-mac-FrameCheckSequenceErrors", "rx_crc_errors_phy"},
    {"eth-mac-FramesReceivedOK", "rx_packets_phy"},
    {"eth-mac-FramesTransmittedOK", "tx_packets_phy"},
}};

}  // namespace

void PortCounterSubjects(const Snapshot& snapshot, const SubjectFn& fn) {
  ForEachPort(snapshot, "port_errors", false, fn);
}
void PortHwCounterSubjects(const Snapshot& snapshot, const SubjectFn& fn) {
  ForEachPort(snapshot, "roce_transport_errors", true, fn);
}

// The netdevs whose driver statistics or standard statistics were read, as subjects; a netdev's
// instance follows the generation of the RDMA device behind it (a driver reload re-creates both).
void NetdevSubjects(const Snapshot& snapshot, const SubjectFn& fn) {
  const auto* netdevs = snapshot.Get<RdmaNetdevFacts>();
  if (netdevs == nullptr) return;
  const auto* topology = snapshot.Get<Topology>();
  const auto* standard = snapshot.Get<EthtoolStdStatsFacts>();
  for (const NetdevFacts& n : netdevs->netdevs) {
    const EthtoolStdStatsNetdevFacts* std_stats = standard == nullptr ? nullptr : standard->Find(n.netdev);
    if (std_stats != nullptr && !std_stats->read) std_stats = nullptr;
    if (!n.stats_read && std_stats == nullptr) continue;
    Subject s;
    s.name = n.netdev;
    s.netdev = n.netdev;
    s.check = "netdev_errors";
    s.instance = std::hash<std::string>{}(n.netdev);
    if (topology != nullptr) {
      for (const RdmaNetdev& l : netdevs->links) {
        if (l.netdev != n.netdev) continue;
        for (const TopologyDevice& d : topology->devices) {
          if (d.name == l.device) s.instance ^= d.generation << 1;
        }
        break;
      }
    }
    auto driver_stat = [&n](std::string_view name) -> std::optional<std::uint64_t> {
      for (const DriverStat& st : n.classified_stats) {
        if (st.name == name) return st.value;
      }
      return std::nullopt;
    };
    s.value = [driver_stat, std_stats](std::string_view name) -> std::optional<std::uint64_t> {
      if (std_stats == nullptr || (!name.starts_with("eth-") && !name.starts_with("rmon-"))) return driver_stat(name);
      for (const auto& [standard_name, driver_name] : kStandardTwins) {
        if (standard_name == name && driver_stat(driver_name)) return std::nullopt;
      }
      return std_stats->stats.Find(name);
    };
    fn(s);
  }
}

}  // namespace rdmahd::error_rates
