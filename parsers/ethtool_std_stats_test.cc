#include "parsers/ethtool_std_stats.h"

#include <gtest/gtest.h>
#include <linux/ethtool.h>
#include <linux/ethtool_netlink.h>

#include <cerrno>
#include <functional>
#include <map>
#include <string>

#include "tests/support/genl_test_message.h"

namespace rdmahd {
namespace {

constexpr std::uint16_t kFamily = 27;  // the ethtool family id the caller resolved (any id works)

// One counter as the kernel's stat_put writes it: a GRP_STAT nest around one u64 typed by index.
void PutStat(nlmsghdr* nlh, std::uint16_t index, std::uint64_t value) {
  mnl_attr_put(nlh, ETHTOOL_A_STATS_GRP_PAD, 0, nullptr);  // the kernel's alignment pad
  nlattr* stat = mnl_attr_nest_start(nlh, ETHTOOL_A_STATS_GRP_STAT);
  mnl_attr_put_u64(nlh, index, value);
  mnl_attr_nest_end(nlh, stat);
}

void PutBucket(nlmsghdr* nlh, std::uint16_t dir, std::uint32_t low, std::uint32_t high, std::uint64_t value) {
  nlattr* b = mnl_attr_nest_start(nlh, dir);
  mnl_attr_put_u32(nlh, ETHTOOL_A_STATS_GRP_HIST_BKT_LOW, low);
  mnl_attr_put_u32(nlh, ETHTOOL_A_STATS_GRP_HIST_BKT_HI, high);
  mnl_attr_put_u64(nlh, ETHTOOL_A_STATS_GRP_HIST_VAL, value);
  mnl_attr_nest_end(nlh, b);
}

nlattr* BeginGroup(nlmsghdr* nlh, std::uint32_t id, std::uint32_t string_set) {
  nlattr* g = mnl_attr_nest_start(nlh, ETHTOOL_A_STATS_GRP);
  mnl_attr_put_u32(nlh, ETHTOOL_A_STATS_GRP_ID, id);
  mnl_attr_put_u32(nlh, ETHTOOL_A_STATS_GRP_SS_ID, string_set);
  return g;
}

void PutHeader(nlmsghdr* nlh, std::uint32_t ifindex, const char* name) {
  nlattr* h = mnl_attr_nest_start(nlh, ETHTOOL_A_STATS_HEADER);
  mnl_attr_put_u32(nlh, ETHTOOL_A_HEADER_DEV_INDEX, ifindex);
  mnl_attr_put_strz(nlh, ETHTOOL_A_HEADER_DEV_NAME, name);
  mnl_attr_nest_end(nlh, h);
}

// An mlx5 port whose PHY counts the symbol and FCS errors of corpus 68 (a ConnectX-6 Dx with a
// power-starved QSFP28: rx_symbol_err_phy 13115284, rx_crc_errors_phy 13147323; mlx5 reports the
// same registers as eth-phy SymbolErrorDuringCarrier and eth-mac FrameCheckSequenceErrors), with
// pause frames in eth-ctrl and two of mlx5's RMON size buckets.
std::vector<std::uint8_t> Mlx5Reply(std::uint32_t seq = 1) {
  testing::GenlDatagram d;
  nlmsghdr* nlh = d.Begin(kFamily, ETHTOOL_MSG_STATS_GET_REPLY, seq);
  PutHeader(nlh, 4, "enp129s0f0np0");
  nlattr* g = BeginGroup(nlh, ETHTOOL_STATS_ETH_PHY, ETH_SS_STATS_ETH_PHY);
  PutStat(nlh, ETHTOOL_A_STATS_ETH_PHY_5_SYM_ERR, 13115284);
  mnl_attr_nest_end(nlh, g);
  g = BeginGroup(nlh, ETHTOOL_STATS_ETH_MAC, ETH_SS_STATS_ETH_MAC);
  PutStat(nlh, ETHTOOL_A_STATS_ETH_MAC_2_TX_PKT, 902623288966);
  PutStat(nlh, ETHTOOL_A_STATS_ETH_MAC_6_FCS_ERR, 13147323);
  PutStat(nlh, ETHTOOL_A_STATS_ETH_MAC_25_TOO_LONG_ERR, 0);
  mnl_attr_nest_end(nlh, g);
  g = BeginGroup(nlh, ETHTOOL_STATS_ETH_CTRL, ETH_SS_STATS_ETH_CTRL);
  PutStat(nlh, ETHTOOL_A_STATS_ETH_CTRL_4_RX, 5745055);
  mnl_attr_nest_end(nlh, g);
  g = BeginGroup(nlh, ETHTOOL_STATS_RMON, ETH_SS_STATS_RMON);
  PutBucket(nlh, ETHTOOL_A_STATS_GRP_HIST_RX, 0, 64, 11);
  PutBucket(nlh, ETHTOOL_A_STATS_GRP_HIST_RX, 65, 127, 12);
  PutBucket(nlh, ETHTOOL_A_STATS_GRP_HIST_TX, 8192, 0, 13);
  PutStat(nlh, ETHTOOL_A_STATS_RMON_JABBER, 7);
  mnl_attr_nest_end(nlh, g);
  d.End();
  return d.bytes();
}

TEST(EthtoolStdStatsTest, NamesEveryCounterAsEthtoolPrintsIt) {
  auto stats = ParseEthtoolStatsReply(Mlx5Reply(), kFamily);
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  EXPECT_EQ(stats->ifindex, 4u);
  EXPECT_EQ(stats->ifname, "enp129s0f0np0");
  std::map<std::string, std::uint64_t> got;
  for (const auto& c : stats->counters) got[c.name] = c.value;
  const std::map<std::string, std::uint64_t> want{
      {"eth-phy-SymbolErrorDuringCarrier", 13115284},
      {"eth-mac-FramesTransmittedOK", 902623288966},
      {"eth-mac-FrameCheckSequenceErrors", 13147323},
      {"eth-mac-FrameTooLongErrors", 0},
      {"eth-ctrl-MACControlFramesReceived", 5745055},
      {"rx-rmon-etherStatsPkts64Octets", 11},
      {"rx-rmon-etherStatsPkts65to127Octets", 12},
      {"tx-rmon-etherStatsPkts8192toMaxOctets", 13},
      {"rmon-etherStatsJabbers", 7},
  };
  EXPECT_EQ(got, want);
  EXPECT_EQ(stats->Find("eth-mac-FrameCheckSequenceErrors"), std::optional<std::uint64_t>(13147323));
  // A counter the driver does not fill is absent, not zero.
  EXPECT_FALSE(stats->Find("eth-mac-AlignmentErrors").has_value());
}

TEST(EthtoolStdStatsTest, KeepsTheNumberOfACounterOrGroupNewerThanTheDecoder) {
  testing::GenlDatagram d;
  nlmsghdr* nlh = d.Begin(kFamily, ETHTOOL_MSG_STATS_GET_REPLY);
  nlattr* g = BeginGroup(nlh, ETHTOOL_STATS_ETH_MAC, ETH_SS_STATS_ETH_MAC);
  PutStat(nlh, 31, 5);
  mnl_attr_nest_end(nlh, g);
  g = BeginGroup(nlh, 7, 99);
  PutStat(nlh, 0, 6);
  mnl_attr_nest_end(nlh, g);
  d.End();
  auto stats = ParseEthtoolStatsReply(d.bytes(), kFamily);
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  EXPECT_EQ(stats->Find("eth-mac-31"), std::optional<std::uint64_t>(5));
  EXPECT_EQ(stats->Find("group7-0"), std::optional<std::uint64_t>(6));
}

TEST(EthtoolStdStatsTest, AKernelErrorCarriesItsErrno) {
  testing::GenlDatagram d;
  d.Error(EOPNOTSUPP);
  auto stats = ParseEthtoolStatsReply(d.bytes(), kFamily);
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.error().errno_value, EOPNOTSUPP);
  EXPECT_NE(stats.error().message.find("STATS_GET"), std::string::npos) << stats.error().message;
}

TEST(EthtoolStdStatsTest, RefusesRepliesThatAreNotWhatWasAsked) {
  EXPECT_EQ(ParseEthtoolStatsReply(Mlx5Reply(), kFamily + 1).error().errno_value, EBADMSG);
  EXPECT_EQ(ParseEthtoolStatsReply(Mlx5Reply(7), kFamily, 8).error().errno_value, EBADMSG);
  testing::GenlDatagram other_cmd;
  other_cmd.Begin(kFamily, ETHTOOL_MSG_FEC_GET_REPLY);
  other_cmd.End();
  auto r = ParseEthtoolStatsReply(other_cmd.bytes(), kFamily);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("command"), std::string::npos) << r.error().message;
}

TEST(EthtoolStdStatsTest, RefusesGarbledRepliesWithAReason) {
  struct Case {
    std::string name;
    std::function<void(nlmsghdr*)> fill;
    std::string says;
  };
  const Case cases[] = {
      {"group without id",
       [](nlmsghdr* nlh) {
         nlattr* g = mnl_attr_nest_start(nlh, ETHTOOL_A_STATS_GRP);
         PutStat(nlh, 0, 1);
         mnl_attr_nest_end(nlh, g);
       },
       "without ETHTOOL_A_STATS_GRP_ID"},
      {"group twice",
       [](nlmsghdr* nlh) {
         for (int i = 0; i < 2; ++i) mnl_attr_nest_end(nlh, BeginGroup(nlh, ETHTOOL_STATS_ETH_PHY, 0));
       },
       "group 0 twice"},
      {"counter twice",
       [](nlmsghdr* nlh) {
         nlattr* g = BeginGroup(nlh, ETHTOOL_STATS_ETH_PHY, 0);
         PutStat(nlh, 0, 1);
         PutStat(nlh, 0, 2);
         mnl_attr_nest_end(nlh, g);
       },
       "counter eth-phy-SymbolErrorDuringCarrier twice"},
      {"counter of 4 bytes",
       [](nlmsghdr* nlh) {
         nlattr* g = BeginGroup(nlh, ETHTOOL_STATS_ETH_PHY, 0);
         nlattr* s = mnl_attr_nest_start(nlh, ETHTOOL_A_STATS_GRP_STAT);
         mnl_attr_put_u32(nlh, 0, 1);
         mnl_attr_nest_end(nlh, s);
         mnl_attr_nest_end(nlh, g);
       },
       "counter eth-phy-SymbolErrorDuringCarrier has 4 bytes, a u64 needs 8"},
      {"bucket without value",
       [](nlmsghdr* nlh) {
         nlattr* g = BeginGroup(nlh, ETHTOOL_STATS_RMON, 0);
         nlattr* b = mnl_attr_nest_start(nlh, ETHTOOL_A_STATS_GRP_HIST_RX);
         mnl_attr_put_u32(nlh, ETHTOOL_A_STATS_GRP_HIST_BKT_LOW, 1);
         mnl_attr_put_u32(nlh, ETHTOOL_A_STATS_GRP_HIST_BKT_HI, 2);
         mnl_attr_nest_end(nlh, b);
         mnl_attr_nest_end(nlh, g);
       },
       "without LOW, HI or VAL"},
      {"bucket 0 to 0",
       [](nlmsghdr* nlh) {
         nlattr* g = BeginGroup(nlh, ETHTOOL_STATS_RMON, 0);
         PutBucket(nlh, ETHTOOL_A_STATS_GRP_HIST_RX, 0, 0, 1);
         mnl_attr_nest_end(nlh, g);
       },
       "both bounds 0"},
      {"interface name too long",
       [](nlmsghdr* nlh) { PutHeader(nlh, 1, "an-interface-name-of-32-bytes-xx"); },
       "DEV_NAME of 32 bytes"},
      {"too many groups",
       [](nlmsghdr* nlh) {
         for (std::uint32_t i = 0; i < 17; ++i) mnl_attr_nest_end(nlh, BeginGroup(nlh, i, 0));
       },
       "more than 16 groups"},
  };
  for (const Case& c : cases) {
    testing::GenlDatagram d;
    c.fill(d.Begin(kFamily, ETHTOOL_MSG_STATS_GET_REPLY));
    d.End();
    auto stats = ParseEthtoolStatsReply(d.bytes(), kFamily);
    ASSERT_FALSE(stats.ok()) << c.name;
    EXPECT_EQ(stats.error().errno_value, EBADMSG) << c.name;
    EXPECT_NE(stats.error().message.find(c.says), std::string::npos) << c.name << ": " << stats.error().message;
  }
}

TEST(EthtoolStdStatsTest, EveryTruncationIsRefusedOrAStrictSubset) {
  const auto whole = Mlx5Reply();
  auto full = ParseEthtoolStatsReply(whole, kFamily);
  ASSERT_TRUE(full.ok());
  std::size_t refused = 0;
  for (const auto& prefix : testing::Truncations(whole)) {
    auto stats = ParseEthtoolStatsReply(prefix, kFamily);
    if (!stats.ok()) {
      ++refused;
      EXPECT_EQ(stats.error().errno_value, EBADMSG);
      continue;
    }
    EXPECT_LT(stats->counters.size(), full->counters.size());
    for (const auto& c : stats->counters) EXPECT_EQ(full->Find(c.name), std::optional<std::uint64_t>(c.value)) << c.name;
  }
  EXPECT_GT(refused, whole.size() / 2);
}

}  // namespace
}  // namespace rdmahd
