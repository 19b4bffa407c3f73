#include "parsers/ethtool_stats.h"

#include <gtest/gtest.h>
#include <linux/ethtool.h>

#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "common/node_fs.h"
#include "tests/support/test_paths.h"

namespace rdmahd {
namespace {

std::string ReadReal(const std::string& rel) {
  auto text = ReadRegularFile(testing::RealFixture(rel), std::size_t{1} << 20);
  if (!text) return "";
  // Excerpt markers are not tool output.
  std::istringstream in(*text);
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.rfind("[... ", 0) == 0) continue;
    out += line + "\n";
  }
  return out;
}

std::map<std::string, std::uint64_t> ByName(const std::vector<DriverStat>& stats) {
  std::map<std::string, std::uint64_t> out;
  for (const auto& s : stats) out[s.name] = s.value;
  return out;
}

// (kind, priority, direction) -> count of stats of that meaning.
std::map<std::tuple<StatKind, int, std::string>, int> Meanings(const std::vector<DriverStat>& stats) {
  std::map<std::tuple<StatKind, int, std::string>, int> out;
  for (const auto& s : stats) {
    StatMeaning m = ClassifyDriverStat(s.name);
    if (m.kind != StatKind::kOther) ++out[{m.kind, m.priority, std::string(m.direction)}];
  }
  return out;
}

int CountKind(const std::vector<DriverStat>& stats, StatKind kind) {
  int n = 0;
  for (const auto& s : stats) n += ClassifyDriverStat(s.name).kind == kind;
  return n;
}

TEST(ClassifyDriverStatTest, VendorNamesMapToOneVocabulary) {
  struct Case {
    const char* name;
    StatKind kind;
    int prio;
    const char* dir;
    double scale;
  } cases[] = {
      {"rx_prio3_pause", StatKind::kPauseFrames, 3, "rx", 1},
      {"tx_prio7_pause_duration", StatKind::kPauseDuration, 7, "tx", 1e6},
      {"rx_prio0_pause_transition", StatKind::kPauseTransitions, 0, "rx", 1},
      {"tx_global_pause", StatKind::kGlobalPauseFrames, -1, "tx", 1},
      {"rx_global_pause_duration", StatKind::kGlobalPauseDuration, -1, "rx", 1e6},
      {"tx_pause_storm_warning_events", StatKind::kPauseStormEvents, -1, "", 1},
      {"rx_discards_phy", StatKind::kRxDiscards, -1, "", 1},
      {"rx_out_of_buffer", StatKind::kRxOutOfBuffer, -1, "", 1},
      {"rx_symbol_err_phy", StatKind::kLinkErrors, -1, "", 1},
      {"rx_crc_errors_phy", StatKind::kLinkErrors, -1, "", 1},
      {"tx_pci_signal_integrity", StatKind::kLinkErrors, -1, "tx", 1},
      {"rx_packets_phy", StatKind::kPhyPackets, -1, "rx", 1},
      {"tx_pfc_ena_frames_pri5", StatKind::kPauseFrames, 5, "tx", 1},
      {"pfc_pri2_rx_duration_us", StatKind::kPauseDuration, 2, "rx", 1e6},
      {"pfc_pri2_tx_transitions", StatKind::kPauseTransitions, 2, "tx", 1},
      {"continuous_roce_pause_events", StatKind::kPauseStormEvents, -1, "", 1},
      {"rx_priority_4_xoff.nic", StatKind::kPauseFrames, 4, "rx", 1},
      {"link_xoff_tx.nic", StatKind::kGlobalPauseFrames, -1, "tx", 1},
      // Look-alikes that are not pause counters.
      {"rx_prio3_packets", StatKind::kOther, -1, "", 1},
      {"rx_prio8_pause", StatKind::kOther, -1, "", 1},
      {"rx_prio3_pause_extra", StatKind::kOther, -1, "", 1},
      {"rx_priority_4_xon.nic", StatKind::kOther, -1, "", 1},
      {"rx_global_pause_transition", StatKind::kOther, -1, "", 1},
      {"rx_packets", StatKind::kOther, -1, "", 1},
      {"rx_crc_errors", StatKind::kOther, -1, "", 1},
      {"", StatKind::kOther, -1, "", 1},
  };
  for (const Case& c : cases) {
    StatMeaning m = ClassifyDriverStat(c.name);
    EXPECT_EQ(m.kind, c.kind) << c.name;
    EXPECT_EQ(m.priority, c.prio) << c.name;
    EXPECT_EQ(m.direction, c.dir) << c.name;
    EXPECT_DOUBLE_EQ(m.divide_by, c.scale) << c.name;
  }
}

TEST(EthtoolStatsTextTest, RealMlx5DumpWith751CountersAndPfcOff) {
  if (!testing::RealFixturesAvailable()) GTEST_SKIP() << "no ../shared/fixtures/real";
  auto parsed = ParseEthtoolStatsText(ReadReal("outputs/ethtool-S/isc-projects_ethq__tests_mlx5_core.txt"));
  EXPECT_EQ(parsed.stats.size(), 751u);
  EXPECT_EQ(parsed.skipped_lines, 0u);
  auto by = ByName(parsed.stats);
  EXPECT_EQ(by.at("rx_prio0_bytes"), 2202570777997u);
  // PFC is off on every priority in this capture: the per-priority pause counters do not exist,
  // which is "absent", not zero.
  EXPECT_EQ(CountKind(parsed.stats, StatKind::kPauseFrames), 0);
  EXPECT_EQ(CountKind(parsed.stats, StatKind::kPauseDuration), 0);
  auto meanings = Meanings(parsed.stats);
  EXPECT_EQ((meanings[{StatKind::kGlobalPauseFrames, -1, "rx"}]), 1);
  EXPECT_EQ((meanings[{StatKind::kGlobalPauseFrames, -1, "tx"}]), 1);
  EXPECT_EQ((meanings[{StatKind::kGlobalPauseDuration, -1, "tx"}]), 1);
  EXPECT_EQ(by.at("rx_global_pause"), 0u);
  EXPECT_EQ(by.at("rx_out_of_buffer"), 0u);
  EXPECT_EQ(by.at("tx15_xmit_more"), 5530u);
}

TEST(EthtoolStatsTextTest, RealMlx5Kernel515DumpDiscardsAndGlobalPause) {
  if (!testing::RealFixturesAvailable()) GTEST_SKIP() << "no ../shared/fixtures/real";
  auto parsed = ParseEthtoolStatsText(ReadReal("outputs/ethtool-S/bpf-list_2024-06-19_xdp-regression_mlx5_kernel-5.15.txt"));
  auto by = ByName(parsed.stats);
  EXPECT_EQ(by.at("rx_discards_phy"), 58591428329u);
  EXPECT_EQ(by.at("rx_out_of_buffer"), 990473555u);
  EXPECT_EQ(by.at("tx_pause_ctrl_phy"), 5745055u);
  EXPECT_EQ(by.at("tx_global_pause"), 5745042u);
  StatMeaning m = ClassifyDriverStat("tx_global_pause_duration");
  EXPECT_DOUBLE_EQ(static_cast<double>(by.at("tx_global_pause_duration")) / m.divide_by, 771.10381);
  EXPECT_EQ(CountKind(parsed.stats, StatKind::kPauseFrames), 0);
}

TEST(EthtoolStatsTextTest, RealBnxtDumpSplitsAtTheLastColon) {
  if (!testing::RealFixturesAvailable()) GTEST_SKIP() << "no ../shared/fixtures/real";
  auto parsed = ParseEthtoolStatsText(ReadReal("outputs/ethtool-S/isc-projects_ethq__tests_bnxt_en.txt"));
  EXPECT_EQ(parsed.stats.size(), 499u);  // 500 lines minus "NIC statistics:"
  EXPECT_EQ(parsed.skipped_lines, 0u);
  auto by = ByName(parsed.stats);
  EXPECT_EQ(by.at("[0]: rx_ucast_packets"), 10198513532u);
  EXPECT_EQ(by.at("[11]: rx_discards"), 9244693u);
  EXPECT_EQ(by.at("rx_total_ring_discards"), 655430134u);
  // bnxt_en always has its per-priority PFC counters: 8 priorities x rx/tx for frames, durations
  // and transitions.
  auto meanings = Meanings(parsed.stats);
  for (int p = 0; p < 8; ++p) {
    for (const char* d : {"rx", "tx"}) {
      EXPECT_EQ((meanings[{StatKind::kPauseFrames, p, d}]), 1) << p << d;
      EXPECT_EQ((meanings[{StatKind::kPauseDuration, p, d}]), 1) << p << d;
      EXPECT_EQ((meanings[{StatKind::kPauseTransitions, p, d}]), 1) << p << d;
    }
  }
  EXPECT_EQ(CountKind(parsed.stats, StatKind::kPauseStormEvents), 2);
  EXPECT_EQ((meanings[{StatKind::kGlobalPauseFrames, -1, "rx"}]), 1);
  EXPECT_EQ(by.at("rx_stat_discard"), 49337u);
}

TEST(EthtoolStatsTextTest, RealIceDumpPerPriorityXoff) {
  if (!testing::RealFixturesAvailable()) GTEST_SKIP() << "no ../shared/fixtures/real";
  auto parsed = ParseEthtoolStatsText(ReadReal("outputs/ethtool-S/isc-projects_ethq__tests_ice.txt"));
  EXPECT_EQ(parsed.stats.size(), 602u);
  auto meanings = Meanings(parsed.stats);
  for (int p = 0; p < 8; ++p) {
    EXPECT_EQ((meanings[{StatKind::kPauseFrames, p, "rx"}]), 1) << p;
    EXPECT_EQ((meanings[{StatKind::kPauseFrames, p, "tx"}]), 1) << p;
  }
  EXPECT_EQ(CountKind(parsed.stats, StatKind::kPauseFrames), 16);  // xon counters are not pauses
  EXPECT_EQ(CountKind(parsed.stats, StatKind::kGlobalPauseFrames), 2);
}

TEST(EthtoolStatsTextTest, ExcerptWithProseLinesKeepsOnlyCounters) {
  if (!testing::RealFixturesAvailable()) GTEST_SKIP() << "no ../shared/fixtures/real";
  auto parsed = ParseEthtoolStatsText(
      ReadReal("outputs/ethtool-S/github_bytedance-byteps_issue179_mlx5_prio-counters_before-after_EXCERPT.txt"));
  EXPECT_EQ(parsed.skipped_lines, 3u);  // "Before benchmarking:", the command line, "After:"
  EXPECT_EQ(parsed.stats.front(), (DriverStat{"rx_prio0_bytes", 88034564921216u}));
  EXPECT_EQ(CountKind(parsed.stats, StatKind::kPauseFrames), 0);
}

TEST(EthtoolPauseTextTest, ParsesOnOff) {
  auto pp = ParseEthtoolPauseText("Pause parameters for ens1:\nAutonegotiate:\toff\nRX:\t\ton\nTX:\t\toff\n"
                                  "RX negotiated: on\n");
  ASSERT_TRUE(pp.ok()) << pp.error().message;
  EXPECT_FALSE(pp->autoneg);
  EXPECT_TRUE(pp->rx);
  EXPECT_FALSE(pp->tx);
  EXPECT_FALSE(ParseEthtoolPauseText("Pause parameters for ens1:\n").ok());
}

TEST(EthtoolReplyParseTest, ShortBuffersAreRejected) {
  std::vector<std::uint8_t> small(4);
  EXPECT_FALSE(ParseSsetInfoReply(small).ok());
  EXPECT_FALSE(ParseGstringsReply(small, 0).ok());
  EXPECT_FALSE(ParseGstatsReply(small, 0).ok());
  EXPECT_FALSE(ParsePauseParamReply(small).ok());
  // Header says 2 strings but only one fits.
  std::vector<std::uint8_t> gs(sizeof(ethtool_gstrings) + ETH_GSTRING_LEN);
  ethtool_gstrings hdr{ETHTOOL_GSTRINGS, ETH_SS_STATS, 2};
  std::memcpy(gs.data(), &hdr, sizeof(hdr));
  auto r = ParseGstringsReply(gs, 2);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("need"), std::string::npos);
}

// What a capture writes from the ethtool ioctl's answer reads back as it was (daemon/capture.cc).
TEST(EthtoolTextWriterTest, StatsAndPauseTextReadBackAsTheyWereWritten) {
  const std::vector<DriverStat> stats = {{"rx_prio3_pause", 17}, {"tx_pause_storm_warning_events", 2}};
  const EthtoolStatsText back = ParseEthtoolStatsText(EthtoolStatsTextOf(stats));
  EXPECT_EQ(back.skipped_lines, 0u);
  ASSERT_EQ(back.stats.size(), 2u);
  EXPECT_EQ(back.stats[0].name, "rx_prio3_pause");
  EXPECT_EQ(back.stats[0].value, 17u);
  EXPECT_EQ(back.stats[1].value, 2u);
  auto pause = ParseEthtoolPauseText(EthtoolPauseTextOf("ens1f0np0", PauseParam{false, true, false}));
  ASSERT_TRUE(pause.ok()) << pause.error().message;
  EXPECT_FALSE(pause->autoneg);
  EXPECT_TRUE(pause->rx);
  EXPECT_FALSE(pause->tx);
}

}  // namespace
}  // namespace rdmahd
