// Facts of the "ethtool_std_stats" collector: the driver-neutral standard statistics (IEEE 802.3
// PHY and MAC counters, RFC 2819 RMON) of each Ethernet netdev behind an RDMA port, as
// ETHTOOL_MSG_STATS_GET answers (parsers/ethtool_std_stats.h). Data only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "facts/genl_not_captured.h"

namespace rdmahd {

struct EthtoolStdCounter {
  std::string name;
  std::uint64_t value = 0;
};

// One netdev's standard statistics, as parsers/ethtool_std_stats.h decodes ETHTOOL_MSG_STATS_GET.
struct EthtoolStdStats {
  std::uint32_t ifindex = 0;
  std::string ifname;
  std::vector<EthtoolStdCounter> counters;  // in reply order

  std::optional<std::uint64_t> Find(std::string_view name) const {
    for (const EthtoolStdCounter& c : counters) {
      if (c.name == name) return c.value;
    }
    return std::nullopt;
  }
};

struct EthtoolStdStatsNetdevFacts {
  std::string netdev;
  // False when the statistics are unknown (not asked: a capture; a driver without the groups,
  // EOPNOTSUPP or a reply with no counter in them; the kernel without ethtool netlink): Note()
  // says why and `stats` holds nothing.
  bool read = false;
  // Not asked (a capture): Note() words it when read, so that the netdevs of a capture do not each
  // hold the same sentence. Otherwise `note` holds why the statistics are unknown.
  bool not_captured = false;
  std::string note;
  EthtoolStdStats stats;  // counters named "eth-phy-SymbolErrorDuringCarrier", "eth-mac-...", "rmon-..."

  std::string Note() const {
    return not_captured
               ? GenlNotCaptured("standard statistics come", "ethtool -S " + netdev + " --groups eth-phy eth-mac rmon")
               : note;
  }
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
