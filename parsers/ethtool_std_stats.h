// The driver-neutral standard statistics of a netdev: the reply to ETHTOOL_MSG_STATS_GET
// (linux/ethtool_netlink.h, ETHTOOL_A_STATS_*), what `ethtool -S DEV --groups eth-phy eth-mac
// eth-ctrl rmon` prints. The reply holds one ETHTOOL_A_STATS_GRP nest per group the driver
// fills; in it, one ETHTOOL_A_STATS_GRP_STAT nest per counter (holding a single u64 attribute
// whose type is the counter's index in the group's enum) and, for rmon, the size-histogram buckets
// (ETHTOOL_A_STATS_GRP_HIST_RX/TX with BKT_LOW, BKT_HI, VAL). A counter the driver does not have is
// absent, never zero.
//
// Counters are named as ethtool names them: "<group>-<name>" with the IEEE 802.3 / RFC 2819 names
// of the kernel's string sets ("eth-phy-SymbolErrorDuringCarrier", "eth-mac-FrameCheckSequenceErrors",
// "eth-ctrl-MACControlFramesReceived", "rmon-etherStatsJabbers"), histogram buckets
// "<rx|tx>-rmon-etherStatsPkts<LOW>to<HI>Octets" (or "<HI>Octets" when LOW is 0, "<LOW>toMaxOctets"
// when HI is 0). A counter index or a group newer than this decoder keeps its number:
// "eth-mac-31", "group7-0".
//
// The decoded reply (EthtoolStdStats) is data the facts hold: facts/ethtool_std_stats_facts.h.
//
// Pure decoder: the caller sends the request and hands each reply datagram over with the ethtool
// family id it resolved.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "facts/ethtool_std_stats_facts.h"

namespace rdmahd {

// Bounds on what one reply may carry: the kernel has 4 groups of at most 22 counters and 10
// histogram buckets per direction.
inline constexpr std::size_t kEthtoolMaxStatGroups = 16;
inline constexpr std::size_t kEthtoolMaxStdCounters = 512;

// "eth-phy", "eth-mac", "eth-ctrl", "rmon" for ETHTOOL_STATS_*; "group<N>" for a newer group.
std::string EthtoolStatsGroupName(std::uint32_t group_id);

// Decodes the answer to one ETHTOOL_MSG_STATS_GET request. `family_id` is the ethtool generic
// netlink family; `expected_seq` (when non-zero) must match. A kernel error (EOPNOTSUPP from a
// driver without the ops, ENODEV) is an Error with that errno. Malformed (EBADMSG): truncation at
// any level, a group without ETHTOOL_A_STATS_GRP_ID, the same group or counter twice, a counter
// that is not a u64, a histogram bucket missing LOW, HI or VAL, or with LOW and HI both 0, more
// than kEthtoolMaxStatGroups groups or kEthtoolMaxStdCounters counters.
Result<EthtoolStdStats> ParseEthtoolStatsReply(std::span<const std::uint8_t> datagram, std::uint16_t family_id,
                                               std::uint32_t expected_seq = 0);

}  // namespace rdmahd
