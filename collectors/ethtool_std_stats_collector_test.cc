// The ethtool_std_stats collector over a fake ethtool generic netlink transport answering with
// STATS_GET replies built from <linux/ethtool_netlink.h> (the layout of the kernel's
// stats_fill_reply), as no NIC in the VM's kernel fills the groups; and the real kernel's answer for
// this machine's loopback.
#include "collectors/ethtool_std_stats_collector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <libmnl/libmnl.h>
#include <linux/ethtool.h>
#include <linux/ethtool_netlink.h>

#include <map>

#include "facts/ethtool_std_stats_facts.h"
#include "tests/support/fake_genl_transport.h"
#include "tests/support/genl_test_message.h"
#include "tests/support/test_files.h"

namespace rdmahd {
namespace {

using ::testing::HasSubstr;
using testing::FakeGenlTransport;

constexpr std::uint16_t kEthtool = 27;

struct Groups {
  std::map<std::uint16_t, std::uint64_t> phy, mac, rmon;  // counter index -> value
};

void PutGroup(nlmsghdr* nlh, std::uint32_t id, std::uint32_t string_set, const std::map<std::uint16_t, std::uint64_t>& stats) {
  nlattr* g = mnl_attr_nest_start(nlh, ETHTOOL_A_STATS_GRP);
  mnl_attr_put_u32(nlh, ETHTOOL_A_STATS_GRP_ID, id);
  mnl_attr_put_u32(nlh, ETHTOOL_A_STATS_GRP_SS_ID, string_set);
  for (const auto& [index, value] : stats) {
    mnl_attr_put(nlh, ETHTOOL_A_STATS_GRP_PAD, 0, nullptr);
    nlattr* s = mnl_attr_nest_start(nlh, ETHTOOL_A_STATS_GRP_STAT);
    mnl_attr_put_u64(nlh, index, value);
    mnl_attr_nest_end(nlh, s);
  }
  mnl_attr_nest_end(nlh, g);
}

// The kernel puts every group asked for, empty where the driver has no ethtool_ops for it.
std::vector<std::uint8_t> StatsReply(const std::string& ifname, const Groups& g, std::uint32_t seq) {
  testing::GenlDatagram d;
  nlmsghdr* nlh = d.Begin(kEthtool, ETHTOOL_MSG_STATS_GET_REPLY, seq);
  nlattr* h = mnl_attr_nest_start(nlh, ETHTOOL_A_STATS_HEADER);
  mnl_attr_put_u32(nlh, ETHTOOL_A_HEADER_DEV_INDEX, 4);
  mnl_attr_put_strz(nlh, ETHTOOL_A_HEADER_DEV_NAME, ifname.c_str());
  mnl_attr_nest_end(nlh, h);
  PutGroup(nlh, ETHTOOL_STATS_ETH_PHY, ETH_SS_STATS_ETH_PHY, g.phy);
  PutGroup(nlh, ETHTOOL_STATS_ETH_MAC, ETH_SS_STATS_ETH_MAC, g.mac);
  PutGroup(nlh, ETHTOOL_STATS_RMON, ETH_SS_STATS_RMON, g.rmon);
  d.End();
  return d.bytes();
}

struct Kernel {
  std::map<std::string, Groups> netdevs;  // others: EOPNOTSUPP
  std::vector<std::string> asked;

  std::unique_ptr<FakeGenlTransport> Transport() {
    return std::make_unique<FakeGenlTransport>(kEthtool, [this](const GenlMessage& m, bool dump)
                                                              -> Result<FakeGenlTransport::Datagrams> {
      EXPECT_FALSE(dump);
      EXPECT_EQ(m.cmd, ETHTOOL_MSG_STATS_GET);
      const std::string name = testing::EthtoolRequestNetdev(m, ETHTOOL_A_STATS_HEADER);
      asked.push_back(name);
      auto it = netdevs.find(name);
      if (it == netdevs.end()) return testing::KernelError(m, EOPNOTSUPP);
      return FakeGenlTransport::Datagrams{StatsReply(name, it->second, m.header.nlmsg_seq)};
    });
  }
};

Topology Netdevs(const std::vector<std::string>& names) { return testing::NetdevTopology(names); }

const EthtoolStdStatsFacts* Facts(const testing::CollectedRun& r) { return r.snapshot.Get<EthtoolStdStatsFacts>(); }

// The request, byte for byte, as ethtool(8) sends it for `-S DEV --groups eth-phy eth-mac rmon`:
// the header naming the netdev, then the groups as a compact bitset (bits 0, 1 and 3 of 4).
TEST(EthtoolStdStatsCollectorTest, RequestBytes) {
  testing::GenlDatagram d;
  nlmsghdr* nlh = d.Begin(kEthtool, ETHTOOL_MSG_STATS_GET, 9);
  nlh->nlmsg_flags = NLM_F_REQUEST;
  nlattr* h = mnl_attr_nest_start(nlh, ETHTOOL_A_STATS_HEADER);
  mnl_attr_put_strz(nlh, ETHTOOL_A_HEADER_DEV_NAME, "ens1f0np0");
  mnl_attr_nest_end(nlh, h);
  nlattr* set = mnl_attr_nest_start(nlh, ETHTOOL_A_STATS_GROUPS);
  mnl_attr_put(nlh, ETHTOOL_A_BITSET_NOMASK, 0, nullptr);
  mnl_attr_put_u32(nlh, ETHTOOL_A_BITSET_SIZE, 4);
  const std::uint32_t bits = 0b1011;
  mnl_attr_put(nlh, ETHTOOL_A_BITSET_VALUE, sizeof bits, &bits);
  mnl_attr_nest_end(nlh, set);
  d.End();
  EXPECT_EQ(BuildStatsGetRequest(kEthtool, "ens1f0np0", 9), d.bytes());
}

TEST(EthtoolStdStatsCollectorTest, ReadsTheGroupsAndRendersThem) {
  Kernel k;
  // corpus 68's ConnectX-6 Dx (rx_symbol_err_phy 13115284, rx_crc_errors_phy 13147323), as mlx5
  // reports the same registers through the standard groups.
  k.netdevs["ens1f0np0"].phy = {{ETHTOOL_A_STATS_ETH_PHY_5_SYM_ERR, 13115284}};
  k.netdevs["ens1f0np0"].mac = {{ETHTOOL_A_STATS_ETH_MAC_5_RX_PKT, 9000000},
                                {ETHTOOL_A_STATS_ETH_MAC_6_FCS_ERR, 13147323},
                                {ETHTOOL_A_STATS_ETH_MAC_7_ALIGN_ERR, 2}};
  k.netdevs["ens1f0np0"].rmon = {{ETHTOOL_A_STATS_RMON_FRAG, 5}};
  k.netdevs["veth0"] = {};  // the groups come back empty
  EthtoolStdStatsCollector c(k.Transport());
  testing::CollectedRun r = testing::CollectAndRender(c, testing::FakeKernelFs(), Netdevs({"ens1f0np0", "lo", "veth0"}));
  EXPECT_EQ(k.asked, (std::vector<std::string>{"ens1f0np0", "lo", "veth0"}));
  EXPECT_TRUE(r.outcome.errors.empty());
  ASSERT_EQ(Facts(r)->netdevs.size(), 3u);
  EXPECT_TRUE(Facts(r)->netdevs[0].read);
  EXPECT_EQ(Facts(r)->netdevs[0].stats.Find("eth-phy-SymbolErrorDuringCarrier"), 13115284u);
  EXPECT_FALSE(Facts(r)->Find("veth0")->read);
  EXPECT_THAT(Facts(r)->Find("veth0")->note, HasSubstr("fills none of the standard statistics groups"));
  EXPECT_FALSE(Facts(r)->Find("lo")->read);
  EXPECT_THAT(Facts(r)->Find("lo")->note, HasSubstr("EOPNOTSUPP"));

  EXPECT_THAT(r.text, HasSubstr("rdma_netdev_standard_stat_total{netdev=\"ens1f0np0\",stat=\"eth-phy-SymbolErrorDuringCarrier\"} 13115284\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_netdev_standard_stat_total{netdev=\"ens1f0np0\",stat=\"eth-mac-FrameCheckSequenceErrors\"} 13147323\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_netdev_standard_stat_total{netdev=\"ens1f0np0\",stat=\"eth-mac-AlignmentErrors\"} 2\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_netdev_standard_stat_total{netdev=\"ens1f0np0\",stat=\"rmon-etherStatsFragments\"} 5\n"));
  EXPECT_THAT(r.text, ::testing::Not(HasSubstr("veth0")));
  EXPECT_THAT(r.text, ::testing::Not(HasSubstr("\"lo\"")));
  EXPECT_EQ(testing::RenderedFamilies(r.text), testing::DocumentedFamilies("(collector `ethtool_std_stats`)"));
}

TEST(EthtoolStdStatsCollectorTest, ACaptureIsNotAsked) {
  Kernel k;
  auto transport = k.Transport();
  FakeGenlTransport* fake = transport.get();
  EthtoolStdStatsCollector c(std::move(transport));
  testing::CollectedRun r =
      testing::CollectAndRender(c, NodeFs("/nonexistent-sys", "/nonexistent-proc"), Netdevs({"ens1f0np0"}));
  EXPECT_EQ(fake->exchanges, 0);
  ASSERT_EQ(Facts(r)->netdevs.size(), 1u);
  EXPECT_THAT(Facts(r)->netdevs[0].Note(), HasSubstr("not captured"));
  EXPECT_THAT(Facts(r)->netdevs[0].Note(), HasSubstr("ethtool -S ens1f0np0 --groups eth-phy eth-mac rmon"));
  EXPECT_TRUE(Facts(r)->netdevs[0].note.empty());  // worded when read, not held per netdev
  EXPECT_EQ(r.text, "");
}

TEST(EthtoolStdStatsCollectorTest, AKernelWithoutEthtoolNetlinkIsNoCollectorError) {
  Kernel k;
  auto transport = k.Transport();
  transport->family_error = ENOENT;
  EthtoolStdStatsCollector c(std::move(transport));
  testing::CollectedRun r = testing::CollectAndRender(c, testing::FakeKernelFs(), Netdevs({"ens1f0np0"}));
  EXPECT_TRUE(r.outcome.errors.empty());
  ASSERT_EQ(Facts(r)->netdevs.size(), 1u);
  EXPECT_FALSE(Facts(r)->netdevs[0].read);
  EXPECT_THAT(Facts(r)->netdevs[0].note, HasSubstr("ens1f0np0: "));
  EXPECT_EQ(r.text, "");
}

// The real kernel through the real socket: loopback has no PHY or MAC statistics. Kernels that
// have STATS_GET answer with the groups empty (6.x: what `ethtool -S lo --groups eth-phy` shows as
// an empty "Standard stats for lo"); either way lo is unknown with the reason, never read, and
// never a collector error.
TEST(EthtoolStdStatsCollectorTest, RealKernelLoopbackHasNoStandardStatistics) {
  MnlGenlTransport probe(ETHTOOL_GENL_NAME);
  if (auto family = probe.FamilyId(); !family) GTEST_SKIP() << family.error().message;
  EthtoolStdStatsCollector c;
  testing::CollectedRun r = testing::CollectAndRender(c, testing::FakeKernelFs(), Netdevs({"lo"}));
  ASSERT_EQ(Facts(r)->netdevs.size(), 1u);
  EXPECT_FALSE(Facts(r)->netdevs[0].read);
  EXPECT_THAT(Facts(r)->netdevs[0].note, ::testing::AnyOf(HasSubstr("fills none of the standard statistics groups"),
                                                         HasSubstr("EOPNOTSUPP")));
  EXPECT_TRUE(r.outcome.errors.empty());
  EXPECT_EQ(r.text, "");
}

}  // namespace
}  // namespace rdmahd
