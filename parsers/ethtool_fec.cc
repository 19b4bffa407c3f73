#include "parsers/ethtool_fec.h"

#include <linux/ethtool.h>
#include <linux/ethtool_netlink.h>

#include <cstring>

#include "common/netlink_parse.h"
#include "parsers/ethtool_reply.h"

namespace rdmahd {
namespace {

constexpr std::string_view kProtocol = "ethtool netlink FEC_GET";

Error Malformed(const std::string& what) { return NlMalformed(kProtocol, what); }

FecMode ModeOfLinkBit(std::uint32_t bit) {
  switch (bit) {
    case ETHTOOL_LINK_MODE_FEC_NONE_BIT: return FecMode::kOff;
    case ETHTOOL_LINK_MODE_FEC_RS_BIT: return FecMode::kRs;
    case ETHTOOL_LINK_MODE_FEC_BASER_BIT: return FecMode::kBaseR;
    case ETHTOOL_LINK_MODE_FEC_LLRS_BIT: return FecMode::kLlrs;
    default: return FecMode::kOther;
  }
}

Result<FecCounter> ParseStatArray(const NlAttr& a, std::string_view what) {
  if (a.payload.size() % sizeof(std::uint64_t) != 0) {
    return Malformed(std::string(what) + " of " + std::to_string(a.payload.size()) + " bytes, not a u64 array");
  }
  const std::size_t n = a.payload.size() / sizeof(std::uint64_t);
  if (n > 1 + kFecMaxLanes) {
    return Malformed(std::string(what) + " of " + std::to_string(n) + " values, at most " +
                     std::to_string(1 + kFecMaxLanes));
  }
  FecCounter c;
  if (n == 0) return c;
  std::uint64_t values[1 + kFecMaxLanes];
  std::memcpy(values, a.payload.data(), n * sizeof(std::uint64_t));
  c.total = values[0];
  std::uint64_t sum = 0;
  for (std::size_t i = 1; i < n; ++i) {
    c.lanes.push_back(values[i]);
    sum += values[i];  // unsigned: wraps as the kernel's u64 sum does
  }
  if (!c.lanes.empty() && sum != values[0]) {
    return Malformed(std::string(what) + ": the lanes do not add up to the total");
  }
  return c;
}

Status ParseStats(std::span<const std::uint8_t> nest, EthtoolFec& out) {
  auto attrs = SplitNlAttrs(nest, kProtocol, "ETHTOOL_A_FEC_STATS");
  if (!attrs) return attrs.error();
  for (const NlAttr& a : *attrs) {
    FecCounter* target = nullptr;
    std::string_view what;
    if (a.type == ETHTOOL_A_FEC_STAT_CORRECTED) {
      target = &out.corrected_blocks;
      what = "ETHTOOL_A_FEC_STAT_CORRECTED";
    } else if (a.type == ETHTOOL_A_FEC_STAT_UNCORR) {
      target = &out.uncorrectable_blocks;
      what = "ETHTOOL_A_FEC_STAT_UNCORR";
    } else if (a.type == ETHTOOL_A_FEC_STAT_CORR_BITS) {
      target = &out.corrected_bits;
      what = "ETHTOOL_A_FEC_STAT_CORR_BITS";
    } else {
      continue;  // ETHTOOL_A_FEC_STAT_PAD, the histogram of newer kernels
    }
    auto c = ParseStatArray(a, what);
    if (!c) return c.error();
    *target = std::move(*c);
  }
  return Status::Ok();
}

}  // namespace

std::string_view FecModeName(FecMode mode) {
  switch (mode) {
    case FecMode::kOff: return "off";
    case FecMode::kRs: return "rs";
    case FecMode::kBaseR: return "baser";
    case FecMode::kLlrs: return "llrs";
    case FecMode::kOther: return "other";
  }
  return "other";
}

Result<EthtoolFec> ParseEthtoolFecReply(std::span<const std::uint8_t> datagram, std::uint16_t family_id,
                                        std::uint32_t expected_seq) {
  auto reply = GenlReply(datagram, family_id, ETHTOOL_MSG_FEC_GET_REPLY, expected_seq, kProtocol);
  if (!reply) return reply.error();
  auto attrs = SplitNlAttrs(reply->attrs, kProtocol, "ETHTOOL_MSG_FEC_GET_REPLY");
  if (!attrs) return attrs.error();
  EthtoolFec out;
  for (const NlAttr& a : *attrs) {
    if (a.type == ETHTOOL_A_FEC_HEADER) {
      auto header = ParseEthtoolReplyHeader(a.payload, kProtocol);
      if (!header) return header.error();
      out.ifindex = header->ifindex;
      out.ifname = std::move(header->ifname);
    } else if (a.type == ETHTOOL_A_FEC_ACTIVE) {
      auto v = NlAttrAs<std::uint32_t>(a, kProtocol, "ETHTOOL_A_FEC_ACTIVE", "a u32");
      if (!v) return v.error();
      out.active_link_mode = *v;
      out.active = ModeOfLinkBit(*v);
    } else if (a.type == ETHTOOL_A_FEC_AUTO) {
      auto v = NlAttrAs<std::uint8_t>(a, kProtocol, "ETHTOOL_A_FEC_AUTO", "a u8");
      if (!v) return v.error();
      out.auto_mode = *v != 0;
    } else if (a.type == ETHTOOL_A_FEC_STATS) {
      out.has_stats = true;
      if (Status st = ParseStats(a.payload, out); !st) return st.error();
    }
  }
  return out;
}

std::optional<FecCounter> CorrectedBitsFromDriverStats(
    std::span<const std::pair<std::string_view, std::uint64_t>> stats) {
  constexpr std::string_view kLanePrefix = "rx_err_lane_", kLaneSuffix = "_phy";
  std::optional<std::uint64_t> total;
  std::optional<std::uint64_t> lanes[kFecMaxLanes];
  bool any_lane = false;
  for (const auto& [name, value] : stats) {
    if (name == "rx_corrected_bits_phy") {
      total = value;
      continue;
    }
    // rx_err_lane_<digit>_phy, one digit: mlx5 has 4 lanes, the kernel at most 8.
    if (name.size() == kLanePrefix.size() + 1 + kLaneSuffix.size() && name.starts_with(kLanePrefix) &&
        name.ends_with(kLaneSuffix)) {
      const char digit = name[kLanePrefix.size()];
      if (digit >= '0' && digit < static_cast<char>('0' + kFecMaxLanes)) {
        lanes[digit - '0'] = value;
        any_lane = true;
      }
    }
  }
  if (!total && !any_lane) return std::nullopt;
  FecCounter c;
  // Lanes are kept from 0 up to the first missing one (a gap would misnumber the rest); a missing
  // total is the sum of every lane there is.
  std::uint64_t sum = 0;
  bool gap = false;
  for (const auto& lane : lanes) {
    if (!lane) {
      gap = true;
      continue;
    }
    if (!gap) c.lanes.push_back(*lane);
    sum += *lane;
  }
  c.total = total ? total : std::optional<std::uint64_t>(sum);
  return c;
}

std::optional<double> EstimatePreFecBer(std::uint64_t corrected_bits_delta, double seconds, double link_speed_bps) {
  if (!(seconds > 0) || !(link_speed_bps > 0)) return std::nullopt;
  return static_cast<double>(corrected_bits_delta) / (link_speed_bps * seconds);
}

}  // namespace rdmahd
