#include "parsers/ethtool_stats.h"

#include <linux/ethtool.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "common/parse.h"

namespace rdmahd {
namespace {

// A driver reporting more stats than this is treated as broken rather than trusted with memory.
constexpr std::uint32_t kMaxStats = 1u << 16;

// ---- Classification ------------------------------------------------------------------------------
// Patterns: "{d}" matches "rx" or "tx" (the direction), "#" one priority digit 0..7; the rest is literal.
struct Rule {
  std::string_view pattern;
  StatKind kind;
  double divide_by;
};

constexpr std::array kRules = {
    // mlx5 (per-priority counters exist only while PFC is enabled on that priority)
    Rule{"{d}_prio#_pause", StatKind::kPauseFrames, 1.0},
    Rule{"{d}_prio#_pause_duration", StatKind::kPauseDuration, 1e6},  // microseconds
    Rule{"{d}_prio#_pause_transition", StatKind::kPauseTransitions, 1.0},
    Rule{"{d}_global_pause", StatKind::kGlobalPauseFrames, 1.0},
    Rule{"{d}_global_pause_duration", StatKind::kGlobalPauseDuration, 1e6},
    Rule{"tx_pause_storm_warning_events", StatKind::kPauseStormEvents, 1.0},
    Rule{"tx_pause_storm_error_events", StatKind::kPauseStormEvents, 1.0},
    Rule{"rx_discards_phy", StatKind::kRxDiscards, 1.0},
    Rule{"rx_out_of_buffer", StatKind::kRxOutOfBuffer, 1.0},
    Rule{"rx_symbol_err_phy", StatKind::kLinkErrors, 1.0},
    Rule{"rx_crc_errors_phy", StatKind::kLinkErrors, 1.0},
    Rule{"{d}_pci_signal_integrity", StatKind::kLinkErrors, 1.0},
    Rule{"{d}_packets_phy", StatKind::kPhyPackets, 1.0},
    // bnxt_en
    Rule{"{d}_pfc_ena_frames_pri#", StatKind::kPauseFrames, 1.0},
    Rule{"pfc_pri#_{d}_duration_us", StatKind::kPauseDuration, 1e6},
    Rule{"pfc_pri#_{d}_transitions", StatKind::kPauseTransitions, 1.0},
    Rule{"{d}_pause_frames", StatKind::kGlobalPauseFrames, 1.0},
    Rule{"continuous_pause_events", StatKind::kPauseStormEvents, 1.0},
    Rule{"continuous_roce_pause_events", StatKind::kPauseStormEvents, 1.0},
    Rule{"rx_stat_discard", StatKind::kRxDiscards, 1.0},
    // ice (xoff frames are the pause requests)
    Rule{"{d}_priority_#_xoff.nic", StatKind::kPauseFrames, 1.0},
    Rule{"link_xoff_{d}.nic", StatKind::kGlobalPauseFrames, 1.0},
};

bool Match(std::string_view pattern, std::string_view name, StatMeaning& m) {
  std::size_t p = 0, n = 0;
  while (p < pattern.size()) {
    if (pattern.substr(p, 3) == "{d}") {
      std::string_view dir = name.substr(n, 2);
      if (dir != "rx" && dir != "tx") return false;
      m.direction = dir == "rx" ? "rx" : "tx";
      p += 3;
      n += 2;
    } else if (pattern[p] == '#') {
      if (n >= name.size() || name[n] < '0' || name[n] > '7') return false;
      m.priority = name[n] - '0';
      ++p;
      ++n;
    } else {
      if (n >= name.size() || name[n] != pattern[p]) return false;
      ++p;
      ++n;
    }
  }
  return n == name.size();
}

Error Short(std::string_view what, std::size_t have, std::size_t need) {
  return Error{std::string(what) + ": reply buffer of " + std::to_string(have) + " bytes, need " +
                   std::to_string(need),
               EBADMSG};
}

// The header checks of a reply whose header `Header` counts (in its field `count`) the entries of
// `entry_bytes` each that follow it (ETHTOOL_GSTRINGS, ETHTOOL_GSTATS): the count must be
// `expected_count` (else EAGAIN: the driver's stat set changed between the calls) and the buffer
// must hold that many entries.
template <class Header>
Status CheckCountedReply(std::span<const std::uint8_t> buffer, std::string_view command, __u32 Header::*count,
                         std::string_view entries, std::size_t entry_bytes, std::uint32_t expected_count) {
  if (buffer.size() < sizeof(Header)) return Short(command, buffer.size(), sizeof(Header));
  Header hdr;
  std::memcpy(&hdr, buffer.data(), sizeof(hdr));
  const std::uint32_t n = hdr.*count;
  if (n != expected_count) {
    return Error{std::string(command) + ": " + std::to_string(n) + " " + std::string(entries) + ", expected " +
                     std::to_string(expected_count) + " (the driver's stat set changed; retry)",
                 EAGAIN};
  }
  const std::size_t need = sizeof(hdr) + std::size_t{n} * entry_bytes;
  if (buffer.size() < need) return Short(command, buffer.size(), need);
  return Status::Ok();
}

// Name `i` of an ETHTOOL_GSTRINGS reply that CheckGstringsReply accepted.
std::string_view GstringAt(std::span<const std::uint8_t> reply, std::uint32_t i) {
  const char* s = reinterpret_cast<const char*>(reply.data() + sizeof(ethtool_gstrings) +
                                                std::size_t{i} * ETH_GSTRING_LEN);
  return std::string_view(s, strnlen(s, ETH_GSTRING_LEN));  // a 32-char name has no NUL
}

// Value `i` of an ETHTOOL_GSTATS reply that CheckGstatsReply accepted.
std::uint64_t GstatAt(std::span<const std::uint8_t> reply, std::uint32_t i) {
  std::uint64_t v;
  std::memcpy(&v, reply.data() + sizeof(ethtool_stats) + std::size_t{i} * sizeof(v), sizeof(v));
  return v;
}

}  // namespace

StatMeaning ClassifyDriverStat(std::string_view name) {
  for (const Rule& r : kRules) {
    StatMeaning m;
    if (Match(r.pattern, name, m)) {
      m.kind = r.kind;
      m.divide_by = r.divide_by;
      return m;
    }
  }
  return {};
}

// ---- Reply buffers ---------------------------------------------------------------------------------
Result<std::uint32_t> ParseSsetInfoReply(std::span<const std::uint8_t> buffer) {
  constexpr std::size_t need = sizeof(ethtool_sset_info) + sizeof(std::uint32_t);
  if (buffer.size() < need) return Short("ETHTOOL_GSSET_INFO", buffer.size(), need);
  ethtool_sset_info info;
  std::memcpy(&info, buffer.data(), sizeof(info));
  // The kernel clears the bit of a string set the driver does not have.
  if ((info.sset_mask & (1ULL << ETH_SS_STATS)) == 0) {
    return Error{"ETHTOOL_GSSET_INFO: driver has no statistics string set", EOPNOTSUPP};
  }
  std::uint32_t count;
  std::memcpy(&count, buffer.data() + sizeof(info), sizeof(count));
  if (count > kMaxStats) {
    return Error{"ETHTOOL_GSSET_INFO: implausible stats count " + std::to_string(count), EBADMSG};
  }
  return count;
}

Status CheckGstringsReply(std::span<const std::uint8_t> buffer, std::uint32_t expected_count) {
  return CheckCountedReply(buffer, "ETHTOOL_GSTRINGS", &ethtool_gstrings::len, "strings", ETH_GSTRING_LEN,
                           expected_count);
}

Result<std::vector<std::string>> ParseGstringsReply(std::span<const std::uint8_t> buffer,
                                                    std::uint32_t expected_count) {
  if (Status st = CheckGstringsReply(buffer, expected_count); !st) return st.error();
  std::vector<std::string> out;
  out.reserve(expected_count);
  for (std::uint32_t i = 0; i < expected_count; ++i) out.emplace_back(GstringAt(buffer, i));
  return out;
}

Status CheckGstatsReply(std::span<const std::uint8_t> buffer, std::uint32_t expected_count) {
  return CheckCountedReply(buffer, "ETHTOOL_GSTATS", &ethtool_stats::n_stats, "values", sizeof(std::uint64_t),
                           expected_count);
}

Result<std::vector<std::uint64_t>> ParseGstatsReply(std::span<const std::uint8_t> buffer,
                                                    std::uint32_t expected_count) {
  if (Status st = CheckGstatsReply(buffer, expected_count); !st) return st.error();
  std::vector<std::uint64_t> out(expected_count);
  for (std::uint32_t i = 0; i < expected_count; ++i) out[i] = GstatAt(buffer, i);
  return out;
}

std::span<const std::uint8_t> RawDriverStats::names() const {
  return std::span<const std::uint8_t>(strings).subspan(sizeof(ethtool_gstrings),
                                                        std::size_t{count} * ETH_GSTRING_LEN);
}

std::string_view RawDriverStats::name(std::uint32_t i) const { return GstringAt(strings, i); }

std::uint64_t RawDriverStats::value(std::uint32_t i) const { return GstatAt(values, i); }

Result<PauseParam> ParsePauseParamReply(std::span<const std::uint8_t> buffer) {
  if (buffer.size() < sizeof(ethtool_pauseparam)) {
    return Short("ETHTOOL_GPAUSEPARAM", buffer.size(), sizeof(ethtool_pauseparam));
  }
  ethtool_pauseparam pp;
  std::memcpy(&pp, buffer.data(), sizeof(pp));
  return PauseParam{pp.autoneg != 0, pp.rx_pause != 0, pp.tx_pause != 0};
}

// ---- Captured text ---------------------------------------------------------------------------------
EthtoolStatsText ParseEthtoolStatsText(std::string_view text) {
  EthtoolStatsText out;
  while (!text.empty()) {
    std::size_t eol = text.find('\n');
    std::string_view line = Trim(text.substr(0, eol));
    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
    if (line.empty() || line == "NIC statistics:") continue;
    std::size_t sep = line.rfind(": ");
    std::optional<std::uint64_t> value;
    if (sep != std::string_view::npos && sep > 0) value = ParseU64(line.substr(sep + 2));
    if (!value) {
      ++out.skipped_lines;
      continue;
    }
    out.stats.push_back({std::string(Trim(line.substr(0, sep))), *value});
  }
  return out;
}

Result<PauseParam> ParseEthtoolPauseText(std::string_view text) {
  PauseParam pp;
  bool have_rx = false, have_tx = false;
  while (!text.empty()) {
    std::size_t eol = text.find('\n');
    std::string_view line = Trim(text.substr(0, eol));
    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
    std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = Trim(line.substr(0, colon));
    std::string_view val = Trim(line.substr(colon + 1));
    bool on = val == "on";
    if (!on && val != "off") continue;
    if (key == "Autonegotiate") pp.autoneg = on;
    else if (key == "RX") { pp.rx = on; have_rx = true; }
    else if (key == "TX") { pp.tx = on; have_tx = true; }
  }
  if (!have_rx || !have_tx) return Error{"ethtool -a text: no \"RX:\"/\"TX:\" on|off lines", EBADMSG};
  return pp;
}

std::string EthtoolStatsTextOf(const std::vector<DriverStat>& stats) {
  std::string out = "NIC statistics:\n";
  for (const DriverStat& s : stats) out += "     " + s.name + ": " + std::to_string(s.value) + "\n";
  return out;
}

std::string EthtoolPauseTextOf(const std::string& netdev, const PauseParam& p) {
  auto onoff = [](bool b) { return b ? "on" : "off"; };
  return "Pause parameters for " + netdev + ":\nAutonegotiate:\t" + onoff(p.autoneg) + "\nRX:\t\t" + onoff(p.rx) +
         "\nTX:\t\t" + onoff(p.tx) + "\n";
}

}  // namespace rdmahd
