// Facts of the "ethtool_std_stats" collector: the driver-neutral standard statistics (IEEE 802.3
// PHY and MAC counters, RFC 2819 RMON) of each Ethernet netdev behind an RDMA port, as
// ETHTOOL_MSG_STATS_GET answers (parsers/ethtool_std_stats.h). Data only.
#pragma once

#include <string>
#include <vector>

#include "parsers/ethtool_std_stats.h"

namespace rdmahd {

struct EthtoolStdStatsNetdevFacts {
  std::string netdev;
  // False when the statistics are unknown (not asked: a capture; a driver without the groups,
  // EOPNOTSUPP or a reply with no counter in them; the kernel without ethtool netlink): `note`
  // says why and `stats` holds nothing.
  bool read = false;
  std::string note;
  EthtoolStdStats stats;  // counters named "eth-phy-SymbolErrorDuringCarrier", "eth-mac-...", "rmon-..."
};

struct EthtoolStdStatsFacts {
  std::vector<EthtoolStdStatsNetdevFacts> netdevs;  // in topology order
  const EthtoolStdStatsNetdevFacts* Find(const std::string& netdev) const {
    for (const auto& n : netdevs) {
      if (n.netdev == netdev) return &n;
    }
    return nullptr;
  }
};

}  // namespace rdmahd
