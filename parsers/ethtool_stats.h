// Driver statistics and pause settings of a netdev as the SIOCETHTOOL ioctl answers them
// (ETHTOOL_GSSET_INFO -> ETHTOOL_GSTRINGS -> ETHTOOL_GSTATS, and ETHTOOL_GPAUSEPARAM) and as
// `ethtool -S IF` and `ethtool -a IF` print them (captured nodes: support bundles, fixtures). Pure:
// the kernel's reply buffers or the tools' text in, values or an Error out; the ioctl itself is
// collectors/ethtool_stats.h. The reply parsers are tested with byte-exact buffers built from
// <linux/ethtool.h> structs, and fuzzed.
//
// Driver stat names differ per vendor; ClassifyDriverStat maps the ones that carry pause/PFC/storm/
// discard or error meaning (mlx5, bnxt_en, ice) onto a common vocabulary.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "facts/netdev_facts.h"

namespace rdmahd {

// ---- What a driver stat means -----------------------------------------------------------------
enum class StatKind {
  kOther,
  kPauseFrames,           // per-priority PFC pause frames
  kPauseDuration,         // per-priority time paused
  kPauseTransitions,      // per-priority pause on/off transitions
  kGlobalPauseFrames,     // link-level pause frames
  kGlobalPauseDuration,   // link-level time paused
  kPauseStormEvents,      // the NIC's pause-storm detector fired
  kRxDiscards,            // packets dropped by the port for lack of NIC buffer
  kRxOutOfBuffer,         // packets dropped because the host posted no receive buffer
  kLinkErrors,            // errors of the link's PHY or of the NIC's PCIe link (symbol, CRC, signal integrity)
  kPhyPackets,            // packets through the port's PHY (what error shares are taken of)
};

struct StatMeaning {
  StatKind kind = StatKind::kOther;
  int priority = -1;              // 0..7 for per-priority kinds
  std::string_view direction;     // "rx" (pause frames received: we were paused) or "tx" (we paused the peer)
  double divide_by = 1.0;         // raw value / divide_by = base unit (1e6: microseconds -> seconds)
};

StatMeaning ClassifyDriverStat(std::string_view name);

// ---- Kernel reply buffers (pure, fuzzed) ------------------------------------------------------
// Each takes the whole buffer handed to the ioctl (command header included, as the kernel filled
// it) and checks every length against the buffer before reading.
// ETHTOOL_GSSET_INFO for ETH_SS_STATS: struct ethtool_sset_info followed by one __u32.
Result<std::uint32_t> ParseSsetInfoReply(std::span<const std::uint8_t> buffer);
// ETHTOOL_GSTRINGS: struct ethtool_gstrings followed by len * ETH_GSTRING_LEN bytes.
Result<std::vector<std::string>> ParseGstringsReply(std::span<const std::uint8_t> buffer,
                                                    std::uint32_t expected_count);
// ETHTOOL_GSTATS: struct ethtool_stats followed by n_stats * __u64.
Result<std::vector<std::uint64_t>> ParseGstatsReply(std::span<const std::uint8_t> buffer,
                                                    std::uint32_t expected_count);
// ETHTOOL_GPAUSEPARAM: struct ethtool_pauseparam.
Result<PauseParam> ParsePauseParamReply(std::span<const std::uint8_t> buffer);
// The header checks of the two above, without copying anything out: OK when `buffer` holds
// `expected_count` names (values) in full.
Status CheckGstringsReply(std::span<const std::uint8_t> buffer, std::uint32_t expected_count);
Status CheckGstatsReply(std::span<const std::uint8_t> buffer, std::uint32_t expected_count);

// One statistics read kept as the kernel's checked reply buffers, for callers that keep what they
// derive from the names: while a driver's stat set is unchanged its names come back byte for byte
// the same, so comparing `names()` with the last read tells whether that work can be reused.
// The buffers are reused from read to read.
struct RawDriverStats {
  std::uint32_t count = 0;
  std::vector<std::uint8_t> strings;  // ETHTOOL_GSTRINGS reply
  std::vector<std::uint8_t> values;   // ETHTOOL_GSTATS reply
  // The count names, ETH_GSTRING_LEN bytes each.
  std::span<const std::uint8_t> names() const;
  std::string_view name(std::uint32_t i) const;
  std::uint64_t value(std::uint32_t i) const;
};

// ---- Captured text ------------------------------------------------------------------------------
// `ethtool -S IF` output: "NIC statistics:" header (optional), then "name: value" lines, with or
// without indentation. A name may itself contain ": " (bnxt_en per-ring lines "[0]: rx_discards: 5"),
// so the split is at the LAST ": ". Lines that are not a name and an unsigned decimal value are
// skipped (and counted).
struct EthtoolStatsText {
  std::vector<DriverStat> stats;
  std::size_t skipped_lines = 0;
};
EthtoolStatsText ParseEthtoolStatsText(std::string_view text);
// `ethtool -a IF` output ("Autonegotiate: off", "RX: on", "TX: on"; later lines ignored).
Result<PauseParam> ParseEthtoolPauseText(std::string_view text);
// The inverse, as `ethtool -S NETDEV` and `ethtool -a NETDEV` print them (a capture of what the
// ioctl answered reads back through the parsers above).
std::string EthtoolStatsTextOf(const std::vector<DriverStat>& stats);
std::string EthtoolPauseTextOf(const std::string& netdev, const PauseParam& pause);

}  // namespace rdmahd
