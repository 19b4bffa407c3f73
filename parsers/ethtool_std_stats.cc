#include "parsers/ethtool_std_stats.h"

#include <linux/ethtool_netlink.h>

#include <array>
#include <set>

#include "common/netlink_parse.h"
#include "parsers/ethtool_reply.h"

namespace rdmahd {
namespace {

constexpr std::string_view kProtocol = "ethtool netlink STATS_GET";

// The kernel's string sets for each group, index = the counter's attribute type. These are ABI
// (ethtool prints them; new counters are only ever appended).
constexpr std::array<std::string_view, 1> kEthPhyNames{"SymbolErrorDuringCarrier"};
constexpr std::array<std::string_view, 22> kEthMacNames{
    "FramesTransmittedOK",       "SingleCollisionFrames",   "MultipleCollisionFrames",
    "FramesReceivedOK",          "FrameCheckSequenceErrors", "AlignmentErrors",
    "OctetsTransmittedOK",       "FramesWithDeferredXmissions", "LateCollisions",
    "FramesAbortedDueToXSColls", "FramesLostDueToIntMACXmitError", "CarrierSenseErrors",
    "OctetsReceivedOK",          "FramesLostDueToIntMACRcvError", "MulticastFramesXmittedOK",
    "BroadcastFramesXmittedOK",  "FramesWithExcessiveDeferral", "MulticastFramesReceivedOK",
    "BroadcastFramesReceivedOK", "InRangeLengthErrors",     "OutOfRangeLengthField",
    "FrameTooLongErrors"};
constexpr std::array<std::string_view, 3> kEthCtrlNames{"MACControlFramesTransmitted", "MACControlFramesReceived",
                                                        "UnsupportedOpcodesReceived"};
constexpr std::array<std::string_view, 4> kRmonNames{"etherStatsUndersizePkts", "etherStatsOversizePkts",
                                                     "etherStatsFragments", "etherStatsJabbers"};

static_assert(kEthMacNames.size() == ETHTOOL_A_STATS_ETH_MAC_MAX + 1);
static_assert(kEthCtrlNames.size() == ETHTOOL_A_STATS_ETH_CTRL_MAX + 1);
static_assert(kRmonNames.size() == ETHTOOL_A_STATS_RMON_MAX + 1);

Error Malformed(const std::string& what) { return NlMalformed(kProtocol, what); }

std::span<const std::string_view> NamesOf(std::uint32_t group_id) {
  switch (group_id) {
    case ETHTOOL_STATS_ETH_PHY: return kEthPhyNames;
    case ETHTOOL_STATS_ETH_MAC: return kEthMacNames;
    case ETHTOOL_STATS_ETH_CTRL: return kEthCtrlNames;
    case ETHTOOL_STATS_RMON: return kRmonNames;
    default: return {};
  }
}

std::string CounterName(std::uint32_t group_id, std::uint16_t index) {
  const auto names = NamesOf(group_id);
  std::string out = EthtoolStatsGroupName(group_id) + "-";
  if (index < names.size()) return out + std::string(names[index]);
  return out + std::to_string(index);
}

std::string BucketName(std::string_view dir, const std::string& group, std::uint32_t low, std::uint32_t high) {
  std::string out = std::string(dir) + "-" + group + "-etherStatsPkts";
  if (low != 0 && high != 0) return out + std::to_string(low) + "to" + std::to_string(high) + "Octets";
  if (high != 0) return out + std::to_string(high) + "Octets";
  return out + std::to_string(low) + "toMaxOctets";
}

struct Bucket {
  std::uint32_t low = 0, high = 0;
  std::uint64_t value = 0;
};

Result<Bucket> ParseBucket(std::span<const std::uint8_t> nest) {
  auto attrs = SplitNlAttrs(nest, kProtocol, "ETHTOOL_A_STATS_GRP_HIST");
  if (!attrs) return attrs.error();
  Bucket b;
  bool have_low = false, have_high = false, have_value = false;
  for (const NlAttr& a : *attrs) {
    if (a.type == ETHTOOL_A_STATS_GRP_HIST_BKT_LOW) {
      auto v = NlAttrAs<std::uint32_t>(a, kProtocol, "ETHTOOL_A_STATS_GRP_HIST_BKT_LOW", "a u32");
      if (!v) return v.error();
      b.low = *v;
      have_low = true;
    } else if (a.type == ETHTOOL_A_STATS_GRP_HIST_BKT_HI) {
      auto v = NlAttrAs<std::uint32_t>(a, kProtocol, "ETHTOOL_A_STATS_GRP_HIST_BKT_HI", "a u32");
      if (!v) return v.error();
      b.high = *v;
      have_high = true;
    } else if (a.type == ETHTOOL_A_STATS_GRP_HIST_VAL) {
      auto v = NlAttrAs<std::uint64_t>(a, kProtocol, "ETHTOOL_A_STATS_GRP_HIST_VAL", "a u64");
      if (!v) return v.error();
      b.value = *v;
      have_value = true;
    }
  }
  if (!have_low || !have_high || !have_value) return Malformed("histogram bucket without LOW, HI or VAL");
  if (b.low == 0 && b.high == 0) return Malformed("histogram bucket with both bounds 0");
  return b;
}

Status ParseGroup(std::span<const std::uint8_t> nest, std::set<std::uint32_t>& groups_seen, EthtoolStdStats& out) {
  auto attrs = SplitNlAttrs(nest, kProtocol, "ETHTOOL_A_STATS_GRP");
  if (!attrs) return attrs.error();
  std::optional<std::uint32_t> group_id;
  for (const NlAttr& a : *attrs) {
    if (a.type != ETHTOOL_A_STATS_GRP_ID) continue;
    auto v = NlAttrAs<std::uint32_t>(a, kProtocol, "ETHTOOL_A_STATS_GRP_ID", "a u32");
    if (!v) return v.error();
    group_id = *v;
  }
  if (!group_id) return Malformed("ETHTOOL_A_STATS_GRP without ETHTOOL_A_STATS_GRP_ID");
  if (!groups_seen.insert(*group_id).second) {
    return Malformed("group " + std::to_string(*group_id) + " twice");
  }
  if (groups_seen.size() > kEthtoolMaxStatGroups) {
    return Malformed("more than " + std::to_string(kEthtoolMaxStatGroups) + " groups");
  }
  const std::string group = EthtoolStatsGroupName(*group_id);
  std::set<std::string> names_seen;
  auto add = [&](std::string name, std::uint64_t value) -> Status {
    if (!names_seen.insert(name).second) return Malformed("counter " + name + " twice");
    if (out.counters.size() >= kEthtoolMaxStdCounters) {
      return Malformed("more than " + std::to_string(kEthtoolMaxStdCounters) + " counters");
    }
    out.counters.push_back({std::move(name), value});
    return Status::Ok();
  };
  for (const NlAttr& a : *attrs) {
    if (a.type == ETHTOOL_A_STATS_GRP_STAT) {
      auto inner = SplitNlAttrs(a.payload, kProtocol, "ETHTOOL_A_STATS_GRP_STAT");
      if (!inner) return inner.error();
      for (const NlAttr& s : *inner) {
        std::string name = CounterName(*group_id, s.type);
        auto v = NlAttrAs<std::uint64_t>(s, kProtocol, "counter " + name, "a u64");
        if (!v) return v.error();
        if (Status st = add(std::move(name), *v); !st) return st;
      }
    } else if (a.type == ETHTOOL_A_STATS_GRP_HIST_RX || a.type == ETHTOOL_A_STATS_GRP_HIST_TX) {
      auto b = ParseBucket(a.payload);
      if (!b) return b.error();
      const std::string_view dir = a.type == ETHTOOL_A_STATS_GRP_HIST_RX ? "rx" : "tx";
      if (Status st = add(BucketName(dir, group, b->low, b->high), b->value); !st) return st;
    }
  }
  return Status::Ok();
}

}  // namespace

std::string EthtoolStatsGroupName(std::uint32_t group_id) {
  switch (group_id) {
    case ETHTOOL_STATS_ETH_PHY: return "eth-phy";
    case ETHTOOL_STATS_ETH_MAC: return "eth-mac";
    case ETHTOOL_STATS_ETH_CTRL: return "eth-ctrl";
    case ETHTOOL_STATS_RMON: return "rmon";
    default: return "group" + std::to_string(group_id);
  }
}

Result<EthtoolStdStats> ParseEthtoolStatsReply(std::span<const std::uint8_t> datagram, std::uint16_t family_id,
                                               std::uint32_t expected_seq) {
  auto reply = GenlReply(datagram, family_id, ETHTOOL_MSG_STATS_GET_REPLY, expected_seq, kProtocol);
  if (!reply) return reply.error();
  auto attrs = SplitNlAttrs(reply->attrs, kProtocol, "ETHTOOL_MSG_STATS_GET_REPLY");
  if (!attrs) return attrs.error();
  EthtoolStdStats out;
  std::set<std::uint32_t> groups_seen;
  for (const NlAttr& a : *attrs) {
    if (a.type == ETHTOOL_A_STATS_HEADER) {
      auto header = ParseEthtoolReplyHeader(a.payload, kProtocol);
      if (!header) return header.error();
      out.ifindex = header->ifindex;
      out.ifname = std::move(header->ifname);
    } else if (a.type == ETHTOOL_A_STATS_GRP) {
      if (Status st = ParseGroup(a.payload, groups_seen, out); !st) return st.error();
    }
  }
  return out;
}

}  // namespace rdmahd
