#include "parsers/ethtool_fec.h"

#include <gtest/gtest.h>
#include <linux/ethtool.h>
#include <linux/ethtool_netlink.h>

#include <cerrno>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/genl_test_message.h"

namespace rdmahd {
namespace {

constexpr std::uint16_t kFamily = 27;

struct FecReplySpec {
  std::optional<std::uint32_t> active;
  std::optional<std::uint8_t> auto_mode;
  std::optional<std::vector<std::uint64_t>> corrected, uncorrectable, corrected_bits;
};

// A reply as the kernel's fec_fill_reply writes it: header, modes bitset (empty here), AUTO,
// ACTIVE, then the STATS nest with a 64-bit pad attribute before each array.
std::vector<std::uint8_t> FecReply(const FecReplySpec& spec, std::uint32_t seq = 1) {
  testing::GenlDatagram d;
  nlmsghdr* nlh = d.Begin(kFamily, ETHTOOL_MSG_FEC_GET_REPLY, seq);
  nlattr* h = mnl_attr_nest_start(nlh, ETHTOOL_A_FEC_HEADER);
  mnl_attr_put_u32(nlh, ETHTOOL_A_HEADER_DEV_INDEX, 5);
  mnl_attr_put_strz(nlh, ETHTOOL_A_HEADER_DEV_NAME, "ens1f1np1");
  mnl_attr_nest_end(nlh, h);
  mnl_attr_nest_end(nlh, mnl_attr_nest_start(nlh, ETHTOOL_A_FEC_MODES));
  if (spec.auto_mode) mnl_attr_put_u8(nlh, ETHTOOL_A_FEC_AUTO, *spec.auto_mode);
  if (spec.active) mnl_attr_put_u32(nlh, ETHTOOL_A_FEC_ACTIVE, *spec.active);
  if (spec.corrected || spec.uncorrectable || spec.corrected_bits) {
    nlattr* st = mnl_attr_nest_start(nlh, ETHTOOL_A_FEC_STATS);
    const std::pair<std::uint16_t, const std::optional<std::vector<std::uint64_t>>*> arrays[] = {
        {ETHTOOL_A_FEC_STAT_CORRECTED, &spec.corrected},
        {ETHTOOL_A_FEC_STAT_UNCORR, &spec.uncorrectable},
        {ETHTOOL_A_FEC_STAT_CORR_BITS, &spec.corrected_bits}};
    for (const auto& [type, values] : arrays) {
      if (!*values) continue;
      mnl_attr_put(nlh, ETHTOOL_A_FEC_STAT_PAD, 0, nullptr);
      testing::PutU64Array(nlh, type, **values);
    }
    mnl_attr_nest_end(nlh, st);
  }
  d.End();
  return d.bytes();
}

// Corpus 22: a ConnectX-6 Dx at 100G over 4 lanes in "Standard RS-FEC - RS(528,514)". In RS mode
// mlx5 reports totals only (a codeword spans the lanes).
TEST(EthtoolFecTest, RsFecTotalsAsMlx5ReportsThem) {
  auto fec = ParseEthtoolFecReply(FecReply({ETHTOOL_LINK_MODE_FEC_RS_BIT, 1, std::vector<std::uint64_t>{1523},
                                            std::vector<std::uint64_t>{0}, std::vector<std::uint64_t>{52461136}}),
                                  kFamily);
  ASSERT_TRUE(fec.ok()) << fec.error().message;
  EXPECT_EQ(fec->ifname, "ens1f1np1");
  EXPECT_EQ(fec->ifindex, 5u);
  ASSERT_TRUE(fec->active.has_value());
  EXPECT_EQ(*fec->active, FecMode::kRs);
  EXPECT_EQ(FecModeName(*fec->active), "rs");
  EXPECT_EQ(fec->auto_mode, std::optional<bool>(true));
  EXPECT_TRUE(fec->has_stats);
  EXPECT_EQ(fec->corrected_blocks.total, std::optional<std::uint64_t>(1523));
  EXPECT_TRUE(fec->corrected_blocks.lanes.empty());
  EXPECT_EQ(fec->uncorrectable_blocks.total, std::optional<std::uint64_t>(0));
  EXPECT_EQ(fec->corrected_bits.total, std::optional<std::uint64_t>(52461136));
}

// Base-R (FC) FEC counts per lane; the kernel puts the sum first.
TEST(EthtoolFecTest, BaseRPerLaneArrays) {
  auto fec = ParseEthtoolFecReply(
      FecReply({ETHTOOL_LINK_MODE_FEC_BASER_BIT, 0, std::vector<std::uint64_t>{10, 1, 2, 3, 4},
                std::vector<std::uint64_t>{3, 0, 0, 3, 0}, std::nullopt}),
      kFamily);
  ASSERT_TRUE(fec.ok()) << fec.error().message;
  EXPECT_EQ(*fec->active, FecMode::kBaseR);
  EXPECT_EQ(fec->corrected_blocks.lanes, (std::vector<std::uint64_t>{1, 2, 3, 4}));
  EXPECT_EQ(fec->uncorrectable_blocks.lanes, (std::vector<std::uint64_t>{0, 0, 3, 0}));
  EXPECT_FALSE(fec->corrected_bits.total.has_value());  // not counted: absent, not 0
}

TEST(EthtoolFecTest, OffNoActiveModeAndNoStats) {
  auto off = ParseEthtoolFecReply(FecReply({ETHTOOL_LINK_MODE_FEC_NONE_BIT, 0, {}, {}, {}}), kFamily);
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(*off->active, FecMode::kOff);
  EXPECT_FALSE(off->has_stats);

  auto none = ParseEthtoolFecReply(FecReply({}), kFamily);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->active.has_value());  // the driver reported no active mode: unknown, not off

  auto newer = ParseEthtoolFecReply(FecReply({90, {}, {}, {}, {}}), kFamily);
  ASSERT_TRUE(newer.ok());
  EXPECT_EQ(*newer->active, FecMode::kOther);
  EXPECT_EQ(newer->active_link_mode, std::optional<std::uint32_t>(90));

  // An empty array: the driver does not count it.
  auto empty = ParseEthtoolFecReply(FecReply({ETHTOOL_LINK_MODE_FEC_RS_BIT, {}, std::vector<std::uint64_t>{}, {}, {}}),
                                    kFamily);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->has_stats);
  EXPECT_FALSE(empty->corrected_blocks.total.has_value());
}

// veth and every virtual NIC: the kernel answers EOPNOTSUPP.
TEST(EthtoolFecTest, NotSupportedKeepsItsErrno) {
  testing::GenlDatagram d;
  d.Error(EOPNOTSUPP);
  auto fec = ParseEthtoolFecReply(d.bytes(), kFamily);
  ASSERT_FALSE(fec.ok());
  EXPECT_EQ(fec.error().errno_value, EOPNOTSUPP);
  EXPECT_NE(fec.error().message.find("Operation not supported"), std::string::npos) << fec.error().message;
}

TEST(EthtoolFecTest, RefusesGarbledStatistics) {
  struct Case {
    FecReplySpec spec;
    std::string says;
  };
  const Case cases[] = {
      {{ETHTOOL_LINK_MODE_FEC_RS_BIT, {}, std::vector<std::uint64_t>{10, 1, 2}, {}, {}}, "lanes do not add up"},
      {{ETHTOOL_LINK_MODE_FEC_RS_BIT, {}, std::vector<std::uint64_t>(10, 0), {}, {}}, "of 10 values, at most 9"},
  };
  for (const Case& c : cases) {
    auto fec = ParseEthtoolFecReply(FecReply(c.spec), kFamily);
    ASSERT_FALSE(fec.ok()) << c.says;
    EXPECT_EQ(fec.error().errno_value, EBADMSG);
    EXPECT_NE(fec.error().message.find(c.says), std::string::npos) << fec.error().message;
  }
  // An array of 12 bytes, an ACTIVE of 2 bytes.
  testing::GenlDatagram d;
  nlmsghdr* nlh = d.Begin(kFamily, ETHTOOL_MSG_FEC_GET_REPLY);
  nlattr* st = mnl_attr_nest_start(nlh, ETHTOOL_A_FEC_STATS);
  const std::uint8_t twelve[12] = {};
  mnl_attr_put(nlh, ETHTOOL_A_FEC_STAT_UNCORR, sizeof(twelve), twelve);
  mnl_attr_nest_end(nlh, st);
  d.End();
  auto odd = ParseEthtoolFecReply(d.bytes(), kFamily);
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.error().message.find("ETHTOOL_A_FEC_STAT_UNCORR of 12 bytes"), std::string::npos) << odd.error().message;
  testing::GenlDatagram d2;
  mnl_attr_put_u16(d2.Begin(kFamily, ETHTOOL_MSG_FEC_GET_REPLY), ETHTOOL_A_FEC_ACTIVE, 50);
  d2.End();
  auto short_active = ParseEthtoolFecReply(d2.bytes(), kFamily);
  ASSERT_FALSE(short_active.ok());
  EXPECT_NE(short_active.error().message.find("ETHTOOL_A_FEC_ACTIVE has 2 bytes, a u32 needs 4"), std::string::npos)
      << short_active.error().message;
}

TEST(EthtoolFecTest, EveryTruncationIsRefusedOrLosesOnlyWholeAttributes) {
  const auto whole = FecReply({ETHTOOL_LINK_MODE_FEC_BASER_BIT, 0, std::vector<std::uint64_t>{10, 1, 2, 3, 4},
                               std::vector<std::uint64_t>{3, 0, 0, 3, 0}, std::vector<std::uint64_t>{99}});
  for (const auto& prefix : testing::Truncations(whole)) {
    auto fec = ParseEthtoolFecReply(prefix, kFamily);
    if (!fec.ok()) {
      EXPECT_EQ(fec.error().errno_value, EBADMSG);
      continue;
    }
    // Whatever survived is exactly what was sent.
    EXPECT_EQ(fec->corrected_blocks.total.value_or(10), 10u);
    EXPECT_EQ(fec->uncorrectable_blocks.total.value_or(3), 3u);
    EXPECT_EQ(fec->corrected_bits.total.value_or(99), 99u);
  }
}

// Corpus 68: `ethtool -S` of a ConnectX-6 Dx whose QSFP28 exceeded the power budget: each of the
// four rx_err_lane_N_phy (mlx5's corrected bits per lane) is 13115284.
TEST(EthtoolFecTest, CorrectedBitsFromMlx5DriverStats) {
  const std::vector<std::pair<std::string_view, std::uint64_t>> corpus68{
      {"rx_crc_errors_phy", 13147323}, {"rx_symbol_err_phy", 13115284}, {"rx_err_lane_0_phy", 13115284},
      {"rx_err_lane_1_phy", 13115284}, {"rx_err_lane_2_phy", 13115284}, {"rx_err_lane_3_phy", 13115284}};
  auto bits = CorrectedBitsFromDriverStats(corpus68);
  ASSERT_TRUE(bits.has_value());
  EXPECT_EQ(bits->lanes, std::vector<std::uint64_t>(4, 13115284));
  EXPECT_EQ(bits->total, std::optional<std::uint64_t>(4 * 13115284ull));  // no rx_corrected_bits_phy: the sum

  const std::vector<std::pair<std::string_view, std::uint64_t>> with_total{
      {"rx_corrected_bits_phy", 7}, {"rx_err_lane_0_phy", 3}, {"rx_err_lane_2_phy", 4}, {"rx_err_lane_12_phy", 9}};
  bits = CorrectedBitsFromDriverStats(with_total);
  ASSERT_TRUE(bits.has_value());
  EXPECT_EQ(bits->total, std::optional<std::uint64_t>(7));
  EXPECT_EQ(bits->lanes, std::vector<std::uint64_t>{3});  // lane 1 missing: lane 2 is not renumbered

  const std::vector<std::pair<std::string_view, std::uint64_t>> none{{"rx_packets_phy", 1}};
  EXPECT_FALSE(CorrectedBitsFromDriverStats(none).has_value());
}

TEST(EthtoolFecTest, PreFecBerIsCorrectedBitsOverWireBits) {
  // Corpus 68's four lanes over an hour at 100 Gb/s (corpus 22's speed).
  auto ber = EstimatePreFecBer(4 * 13115284ull, 3600, 100e9);
  ASSERT_TRUE(ber.has_value());
  EXPECT_NEAR(*ber, 52461136.0 / 3.6e14, 1e-20);
  EXPECT_NEAR(*ber, 1.457e-7, 0.001e-7);
  EXPECT_EQ(EstimatePreFecBer(0, 10, 25e9), std::optional<double>(0.0));
  EXPECT_FALSE(EstimatePreFecBer(5, 0, 25e9).has_value());
  EXPECT_FALSE(EstimatePreFecBer(5, 10, 0).has_value());
  EXPECT_FALSE(EstimatePreFecBer(5, -1, 25e9).has_value());
}

}  // namespace
}  // namespace rdmahd
