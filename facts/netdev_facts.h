// Facts of the "netdev" collector (collectors/netdev_collector.h): the Ethernet netdevs behind RDMA ports
// and what the NIC says about them. Data only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/topology.h"

namespace rdmahd {

struct DriverStat {
  std::string name;  // as the driver names it, e.g. rx_prio3_pause or "[0]: rx_discards" (bnxt ring)
  std::uint64_t value = 0;
  bool operator==(const DriverStat&) const = default;
};

// ETHTOOL_GPAUSEPARAM: link-level (global, 802.3x) pause.
struct PauseParam {
  bool autoneg = false;
  bool rx = false;
  bool tx = false;
};

struct NetdevFacts {
  std::string netdev;
  bool present = false;  // <sysfs>/class/net/<netdev> exists (else nothing below was read)
  std::optional<std::int64_t> mtu;              // bytes
  std::optional<std::string> operstate;         // "up", "down", ...
  std::optional<std::int64_t> speed_mbps;       // absent while the link is down (-1 / EINVAL)
  std::optional<std::uint64_t> carrier_changes;

  std::optional<PauseParam> global_pause;       // absent: unknown (see global_pause_note)
  std::string global_pause_note;

  bool stats_read = false;                      // false: unknown (see stats_note)
  std::string stats_note;
  std::vector<DriverStat> classified_stats;     // ClassifyDriverStat(name).kind != kOther
  std::vector<DriverStat> allowlisted_stats;    // matched config.roce.extra_ethtool_stats

  // Pause-storm evidence. Totals are absent when the driver has no such counters.
  std::optional<std::uint64_t> storm_events_total;
  std::optional<double> rx_paused_seconds_total;  // time this port was told to pause, all priorities + link-level
  // Their growth between collections is the roce_pause_storm check's (it records them in the history).
};

struct RdmaNetdevFacts {
  std::vector<RdmaNetdev> links;      // RDMA port -> netdev
  std::vector<NetdevFacts> netdevs;   // one per distinct netdev, sorted by name
  const NetdevFacts* Find(const std::string& netdev) const;
};

}  // namespace rdmahd
