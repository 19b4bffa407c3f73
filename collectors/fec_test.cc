// The fec collector over a fake ethtool generic netlink transport answering with FEC_GET replies
// built from <linux/ethtool_netlink.h> (the layout of the kernel's fec_fill_reply), as no NIC in
// the VM's kernel implements FEC; and the real kernel's answer for this machine's loopback.
#include "collectors/fec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <libmnl/libmnl.h>
#include <linux/ethtool.h>
#include <linux/ethtool_netlink.h>
#include <net/if.h>

#include "facts/fec_facts.h"
#include "parsers/ethtool_fec.h"
#include "tests/support/fake_genl_transport.h"
#include "tests/support/genl_test_message.h"
#include "tests/support/test_files.h"

namespace rdmahd {
namespace {

using ::testing::HasSubstr;
using testing::FakeGenlTransport;

constexpr std::uint16_t kEthtool = 27;

struct Reply {
  std::uint32_t active;
  std::vector<std::uint64_t> corrected, uncorrectable, corrected_bits;
};

std::vector<std::uint8_t> FecReply(const std::string& ifname, const Reply& r, std::uint32_t seq) {
  testing::GenlDatagram d;
  nlmsghdr* nlh = d.Begin(kEthtool, ETHTOOL_MSG_FEC_GET_REPLY, seq);
  nlattr* h = mnl_attr_nest_start(nlh, ETHTOOL_A_FEC_HEADER);
  mnl_attr_put_u32(nlh, ETHTOOL_A_HEADER_DEV_INDEX, 7);
  mnl_attr_put_strz(nlh, ETHTOOL_A_HEADER_DEV_NAME, ifname.c_str());
  mnl_attr_nest_end(nlh, h);
  mnl_attr_put_u32(nlh, ETHTOOL_A_FEC_ACTIVE, r.active);
  nlattr* st = mnl_attr_nest_start(nlh, ETHTOOL_A_FEC_STATS);
  testing::PutU64Array(nlh, ETHTOOL_A_FEC_STAT_CORRECTED, r.corrected);
  testing::PutU64Array(nlh, ETHTOOL_A_FEC_STAT_UNCORR, r.uncorrectable);
  if (!r.corrected_bits.empty()) testing::PutU64Array(nlh, ETHTOOL_A_FEC_STAT_CORR_BITS, r.corrected_bits);
  mnl_attr_nest_end(nlh, st);
  d.End();
  return d.bytes();
}

// The corrected bits per lane of corpus 68 (a ConnectX-6 Dx's `ethtool -S`: rx_err_lane_N_phy),
// read in place, as the per-lane array a driver would send: the total first.
std::vector<std::uint64_t> Corpus68CorrectedBits() {
  const std::string text = testing::ReadRealFixture("corpus/68_ethtool_S_err_lanes_and_port_module_power_budget_cx6dx_blog.txt");
  std::vector<std::pair<std::string_view, std::uint64_t>> stats;
  std::vector<std::pair<std::string, std::uint64_t>> owned;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(at, end - at);
    at = end + 1;
    const std::size_t colon = line.find(':');
    const std::size_t start = line.find_first_not_of(' ');
    if (colon == std::string::npos || start == std::string::npos || start >= colon) continue;
    const std::string value = line.substr(colon + 1);
    if (value.find_first_not_of(" 0123456789") != std::string::npos) continue;
    owned.emplace_back(line.substr(start, colon - start), std::stoull(value));
  }
  for (const auto& [n, v] : owned) stats.emplace_back(n, v);
  auto bits = CorrectedBitsFromDriverStats(stats);
  EXPECT_TRUE(bits.has_value());
  if (!bits) return {};
  std::vector<std::uint64_t> out{*bits->total};
  out.insert(out.end(), bits->lanes.begin(), bits->lanes.end());
  return out;
}

struct Kernel {
  std::map<std::string, Reply> netdevs;  // others: EOPNOTSUPP
  std::vector<std::string> asked;
  std::vector<std::uint32_t> flags;

  std::unique_ptr<FakeGenlTransport> Transport() {
    return std::make_unique<FakeGenlTransport>(kEthtool, [this](const GenlMessage& m, bool dump)
                                                              -> Result<FakeGenlTransport::Datagrams> {
      EXPECT_FALSE(dump);
      EXPECT_EQ(m.cmd, ETHTOOL_MSG_FEC_GET);
      const std::string name = testing::EthtoolRequestNetdev(m, ETHTOOL_A_FEC_HEADER, &flags);
      asked.push_back(name);
      auto it = netdevs.find(name);
      if (it == netdevs.end()) return testing::KernelError(m, EOPNOTSUPP);
      return FakeGenlTransport::Datagrams{FecReply(name, it->second, m.header.nlmsg_seq)};
    });
  }
};

Topology Netdevs(const std::vector<std::string>& names) { return testing::NetdevTopology(names); }

const FecFacts* Facts(const testing::CollectedRun& r) { return r.snapshot.Get<FecFacts>(); }

TEST(FecCollectorTest, AsksWithStatisticsAndRendersTotalsAndLanes) {
  if (!testing::RealFixturesAvailable()) GTEST_SKIP() << "../shared/fixtures/real not present";
  Kernel k;
  const std::vector<std::uint64_t> bits = Corpus68CorrectedBits();
  ASSERT_EQ(bits, (std::vector<std::uint64_t>{4 * 13115284ull, 13115284, 13115284, 13115284, 13115284}));
  k.netdevs["ens1f0np0"] = {ETHTOOL_LINK_MODE_FEC_BASER_BIT, {10, 1, 2, 3, 4}, {3, 0, 0, 3, 0}, bits};
  k.netdevs["ens1f1np1"] = {ETHTOOL_LINK_MODE_FEC_RS_BIT, {1523}, {0}, {}};
  FecCollector c(k.Transport());
  testing::CollectedRun r = testing::CollectAndRender(c, testing::FakeKernelFs(), Netdevs({"ens1f0np0", "ens1f1np1", "veth0"}));
  EXPECT_EQ(k.asked, (std::vector<std::string>{"ens1f0np0", "ens1f1np1", "veth0"}));
  EXPECT_EQ(k.flags, (std::vector<std::uint32_t>{ETHTOOL_FLAG_STATS, ETHTOOL_FLAG_STATS, ETHTOOL_FLAG_STATS}));
  EXPECT_TRUE(r.outcome.errors.empty());
  ASSERT_EQ(Facts(r)->netdevs.size(), 3u);
  EXPECT_TRUE(Facts(r)->netdevs[0].read);
  EXPECT_EQ(Facts(r)->netdevs[0].fec.corrected_bits.lanes.size(), 4u);
  EXPECT_FALSE(Facts(r)->netdevs[2].read);
  EXPECT_THAT(Facts(r)->netdevs[2].note, HasSubstr("reports no FEC (EOPNOTSUPP"));

  EXPECT_THAT(r.text, HasSubstr("rdma_fec_active_mode_info{netdev=\"ens1f0np0\",mode=\"baser\"} 1\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_fec_active_mode_info{netdev=\"ens1f1np1\",mode=\"rs\"} 1\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_fec_corrected_blocks_total{netdev=\"ens1f1np1\"} 1523\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_fec_uncorrectable_blocks_total{netdev=\"ens1f0np0\"} 3\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_fec_lane_uncorrectable_blocks_total{netdev=\"ens1f0np0\",lane=\"2\"} 3\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_fec_corrected_bits_total{netdev=\"ens1f0np0\"} 52461136\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_fec_lane_corrected_bits_total{netdev=\"ens1f0np0\",lane=\"3\"} 13115284\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_fec_lane_corrected_blocks_total{netdev=\"ens1f0np0\",lane=\"0\"} 1\n"));
  EXPECT_THAT(r.text, ::testing::Not(HasSubstr("veth0")));
  EXPECT_EQ(testing::RenderedFamilies(r.text), testing::DocumentedFamilies("(collector `fec`)"));
}

TEST(FecCollectorTest, ACaptureIsNotAsked) {
  Kernel k;
  auto transport = k.Transport();
  FakeGenlTransport* fake = transport.get();
  FecCollector c(std::move(transport));
  testing::CollectedRun r = testing::CollectAndRender(c, NodeFs("/nonexistent-sys", "/nonexistent-proc"), Netdevs({"ens1f0np0"}));
  EXPECT_EQ(fake->exchanges, 0);
  ASSERT_EQ(Facts(r)->netdevs.size(), 1u);
  EXPECT_THAT(Facts(r)->netdevs[0].Note(), HasSubstr("not captured"));
  EXPECT_THAT(Facts(r)->netdevs[0].Note(), HasSubstr("ethtool -I --show-fec ens1f0np0"));
  EXPECT_TRUE(Facts(r)->netdevs[0].note.empty());  // worded when read, not held per netdev
  EXPECT_EQ(r.text, "");
}

TEST(FecCollectorTest, RequestBytes) {
  const auto req = BuildFecGetRequest(kEthtool, "ens1f0np0", 9);
  auto msgs = SplitNlMessages(req, "test");
  ASSERT_TRUE(msgs.ok());
  EXPECT_EQ(msgs->front().header.nlmsg_type, kEthtool);
  EXPECT_EQ(msgs->front().header.nlmsg_seq, 9u);
  EXPECT_EQ(msgs->front().header.nlmsg_flags, NLM_F_REQUEST);
  auto g = SplitGenlMessage(msgs->front(), "test");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->cmd, ETHTOOL_MSG_FEC_GET);
  EXPECT_EQ(g->version, ETHTOOL_GENL_VERSION);
}

// The real kernel through the real socket: loopback has no FEC, so it is unknown with the kernel's
// reason (or the kernel has no ethtool netlink), never read and never a collector error.
TEST(FecCollectorTest, RealKernelLoopbackHasNoFec) {
  MnlGenlTransport probe(ETHTOOL_GENL_NAME);
  if (auto family = probe.FamilyId(); !family) GTEST_SKIP() << family.error().message;
  FecCollector c;
  testing::CollectedRun r = testing::CollectAndRender(c, testing::FakeKernelFs(), Netdevs({"lo"}));
  ASSERT_EQ(Facts(r)->netdevs.size(), 1u);
  EXPECT_FALSE(Facts(r)->netdevs[0].read);
  EXPECT_THAT(Facts(r)->netdevs[0].note, HasSubstr("EOPNOTSUPP"));
  EXPECT_TRUE(r.outcome.errors.empty());
}

}  // namespace
}  // namespace rdmahd
