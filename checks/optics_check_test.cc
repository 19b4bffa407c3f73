// optics on decoded modules (facts/module_facts.h): readings against the module's own thresholds,
// its flags, lanes with lasers off, modules without diagnostics. The collector test
// (collectors/module_eeprom_test.cc) runs it on pages decoded by parsers/module_eeprom.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "core/check.h"
#include "facts/module_facts.h"
#include "facts/netdev_facts.h"
#include "parsers/module_eeprom.h"

namespace rdmahd {
namespace {

using ::testing::HasSubstr;

// A QSFP28 SR4, every lane healthy. Thresholds chosen for the test: temperature 75/-5/70/0 C,
// voltage 3.63/2.97/3.465/3.135 V, RX power 3.4673/0.0447/1.7378/0.0891 mW; bias 13/4/12.5/5 mA and
// TX power 1.0/0.2512/0.7943/0.3162 mW are corpus 67's (an SFP's) values.
ModuleDom Qsfp() {
  ModuleDom m;
  m.standard = ModuleStandard::kSff8636;
  m.identifier = 0x11;
  m.identifier_name = "QSFP28";
  m.vendor_name = "Mellanox";
  m.vendor_part_number = "MMA1B00-C100D";
  m.has_dom = true;
  m.flags_latched = true;
  m.temperature_c = 41.5;
  m.supply_voltage_v = 3.3;
  m.temperature_thresholds_c = ModuleThresholds{75, -5, 70, 0};
  m.voltage_thresholds_v = ModuleThresholds{3.63, 2.97, 3.465, 3.135};
  m.tx_bias_thresholds_ma = ModuleThresholds{13, 4, 12.5, 5};
  m.tx_power_thresholds_mw = ModuleThresholds{1.0, 0.2512, 0.7943, 0.3162};
  m.rx_power_thresholds_mw = ModuleThresholds{3.4673, 0.0447, 1.7378, 0.0891};
  m.temperature_flags = ModuleFlags{};
  m.voltage_flags = ModuleFlags{};
  for (int i = 1; i <= 4; ++i) {
    ModuleLane lane;
    lane.number = i;
    lane.tx_bias_ma = 7.5;
    lane.tx_power_mw = 0.6;
    lane.rx_power_mw = 0.7;
    lane.rx_power_flags = lane.tx_power_flags = lane.tx_bias_flags = ModuleFlags{};
    m.lanes.push_back(lane);
  }
  return m;
}

CheckResult Judge(const ModuleDom& m, std::optional<std::string> operstate = std::nullopt) {
  ModuleEepromFacts facts;
  ModuleNetdevFacts& f = facts.netdevs.emplace_back();
  f.netdev = "ens1f0np0";
  f.read = true;
  f.dom = std::make_shared<const ModuleDom>(m);
  Snapshot s;
  s.Put(std::move(facts));
  if (operstate) {
    RdmaNetdevFacts netdevs;
    NetdevFacts& n = netdevs.netdevs.emplace_back();
    n.netdev = "ens1f0np0";
    n.present = true;
    n.operstate = operstate;
    s.Put(std::move(netdevs));
  }
  Config config;
  auto out = RunRegisteredCheck("module_health", s, config);
  EXPECT_EQ(out.size(), 1u);
  return out.empty() ? CheckResult{} : out[0];
}

TEST(OpticsCheckTest, EveryReadingInsideItsThresholdsIsOk) {
  CheckResult r = Judge(Qsfp());
  EXPECT_EQ(r.verdict, Verdict::kOk);
  EXPECT_EQ(r.reason, "QSFP28 Mellanox MMA1B00-C100D: every reading inside the module's warning thresholds (41.5 C)");
  EXPECT_EQ(r.fix, "");
}

TEST(OpticsCheckTest, LowRxPowerOnALaneNamesTheFiber) {
  ModuleDom m = Qsfp();
  m.lanes[2].rx_power_mw = 0.05;  // -13.01 dBm: under the low warning 0.0891, above the alarm 0.0447
  CheckResult r = Judge(m);
  EXPECT_EQ(r.verdict, Verdict::kWarning);
  EXPECT_EQ(r.reason, "QSFP28 Mellanox MMA1B00-C100D: lane 3 RX power -13.01 dBm (0.0500 mW) at or below its low "
                      "warning -10.50 dBm (0.0891 mW)");
  EXPECT_THAT(r.fix, HasSubstr("clean the fiber connectors at both ends"));
  m.lanes[2].rx_power_mw = 0.03;
  r = Judge(m);
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_THAT(r.reason, HasSubstr("lane 3 RX power -15.23 dBm (0.0300 mW) at or below its low alarm -13.50 dBm"));
  EXPECT_THAT(Judge(m, "up").reason, ::testing::EndsWith(" (the link is up, on a shrinking margin)"));
  EXPECT_THAT(Judge(m, "down").reason, ::testing::EndsWith(" (the link is down)"));
  m = Qsfp();
  m.temperature_c = 71;  // not about light: no link state
  EXPECT_THAT(Judge(m, "up").reason, ::testing::Not(HasSubstr("the link is")));
}

TEST(OpticsCheckTest, TemperatureNearItsAlarmNamesTheAirflow) {
  ModuleDom m = Qsfp();
  m.temperature_c = 71.2;
  CheckResult r = Judge(m);
  EXPECT_EQ(r.verdict, Verdict::kWarning);
  EXPECT_THAT(r.reason, HasSubstr("temperature 71.2 C at or above its high warning 70.0 C"));
  EXPECT_THAT(r.fix, HasSubstr("airflow"));
}

// The incident's shape: a module running hot, then its laser out of range. The verdict is the
// worst finding (the bias alarm), the reason and the fix start from the first cause, the heat.
TEST(OpticsCheckTest, AHighTemperatureWarningIsNamedBeforeTheLaserAlarmThatFollows) {
  ModuleDom m = Qsfp();
  m.temperature_c = 72;            // warning
  m.lanes[0].tx_bias_ma = 13.5;    // alarm
  m.lanes[1].tx_power_mw = 0.3;    // warning
  m.lanes[3].rx_power_mw = 0.08;   // warning
  CheckResult r = Judge(m);
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_EQ(r.reason, "QSFP28 Mellanox MMA1B00-C100D: temperature 72.0 C at or above its high warning 70.0 C, the "
                      "first cause to look at; then lane 1 TX bias 13.50 mA at or above its high alarm 13.00 mA; "
                      "lane 2 TX power -5.23 dBm (0.3000 mW) at or below its low warning -5.00 dBm (0.3162 mW); and 1 "
                      "more");
  EXPECT_THAT(r.fix, ::testing::StartsWith("the module runs hot: first the cooling (airflow and fans"));
  EXPECT_THAT(r.fix, HasSubstr("then reseat the module"));
  EXPECT_THAT(r.fix, HasSubstr("then replace it"));
  EXPECT_THAT(r.fix, HasSubstr("The laser and light findings can follow from it"));
}

// Several flags at once (latched, SFF-8636): temperature high alarm, lane 2 TX power low alarm,
// lane 2 RX loss of signal. Module health, then the laser, then the light arriving.
TEST(OpticsCheckTest, SeveralFlagsAreOrderedByCause) {
  ModuleDom m = Qsfp();
  m.lanes[1].rx_loss_of_signal = true;
  m.lanes[1].tx_power_flags = ModuleFlags{false, true, false, false};
  m.temperature_flags = ModuleFlags{true, false, false, false};
  CheckResult r = Judge(m, "down");
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_EQ(r.reason, "QSFP28 Mellanox MMA1B00-C100D: temperature high alarm flag set (latched since the last read), "
                      "now 41.5 C, the first cause to look at; then lane 2 TX power low alarm flag set (latched since "
                      "the last read), now -2.22 dBm (0.6000 mW); lane 2 RX loss of signal (latched since the last "
                      "read), now -1.55 dBm (0.7000 mW)");
  EXPECT_THAT(r.fix, HasSubstr("the module runs hot"));
  // Without the temperature the laser leads; without both, the light (with the link state).
  m.temperature_flags = ModuleFlags{};
  r = Judge(m, "down");
  EXPECT_EQ(r.reason, "QSFP28 Mellanox MMA1B00-C100D: lane 2 TX power low alarm flag set (latched since the last "
                      "read), now -2.22 dBm (0.6000 mW); lane 2 RX loss of signal (latched since the last read), now "
                      "-1.55 dBm (0.7000 mW)");  // listed in order, but the laser does not explain the far end's light
  EXPECT_THAT(r.fix, HasSubstr("laser is failing"));
  EXPECT_THAT(r.fix, ::testing::Not(HasSubstr("can follow from it")));
  m.lanes[1].tx_power_flags = ModuleFlags{};
  r = Judge(m, "down");
  EXPECT_EQ(r.verdict, Verdict::kWarning);
  EXPECT_EQ(r.reason, "QSFP28 Mellanox MMA1B00-C100D: lane 2 RX loss of signal (latched since the last read), now "
                      "-1.55 dBm (0.7000 mW) (the link is down)");
  // Loss of signal with the RX power below its alarm adds to that finding.
  m.lanes[1].rx_power_mw = 0.01;
  r = Judge(m);
  EXPECT_EQ(r.reason, "QSFP28 Mellanox MMA1B00-C100D: lane 2 RX power -20.00 dBm (0.0100 mW) at or below its low "
                      "alarm -13.50 dBm (0.0447 mW), loss of signal");
}

// A module memory map whose checksum fails: its thresholds and the options its readings are
// decoded with cannot be trusted. Unknown, naming the checksum, the module and both values.
TEST(OpticsCheckTest, AChecksumMismatchIsUnknownAndNamesIt) {
  ModuleDom m = Qsfp();
  ModuleChecksum ok{"SFF-8472 A0h CC_BASE", "a0h_cc_base", "identity", 63, 0, 62, 0x20, 0x20};
  ModuleChecksum bad{"SFF-8472 A2h CC_DMI", "a2h_cc_dmi", "thresholds and calibration", 95, 0, 94, 0x12, 0x34};
  m.checksums = {ok, bad};
  m.temperature_c = 90;  // beyond its alarm, from bytes that cannot be trusted: not judged
  CheckResult r = Judge(m);
  EXPECT_EQ(r.verdict, Verdict::kUnknown);
  EXPECT_EQ(r.reason, "SFF-8472 A2h CC_DMI checksum mismatch on ens1f0np0's module: stored 0x12, computed 0x34 over "
                      "bytes 0-94 (thresholds and calibration); readings not judged");
  EXPECT_THAT(r.fix, HasSubstr("`ethtool -m ens1f0np0 hex on`"));
  m.checksums[0].computed = 0x21;
  EXPECT_THAT(Judge(m).reason, HasSubstr("SFF-8472 A0h CC_BASE checksum mismatch on ens1f0np0's module: stored 0x20, "
                                         "computed 0x21 over bytes 0-62 (identity); also SFF-8472 A2h CC_DMI; readings "
                                         "not judged"));
}

// A random 512-byte SFP dump decoded to `ok ... (-111.8 C)` before checksums were checked.
TEST(OpticsCheckTest, ARandomSfpDumpIsNotJudged) {
  std::mt19937 rng(111);
  for (int i = 0; i < 200; ++i) {
    std::vector<std::uint8_t> d(512);
    for (auto& b : d) b = static_cast<std::uint8_t>(rng());
    d[0] = 0x03;
    auto pages = SplitModuleEepromDump(d);
    ASSERT_TRUE(pages.ok());
    auto m = DecodeModuleEeprom(*pages);
    ASSERT_TRUE(m.ok());
    CheckResult r = Judge(*m);
    EXPECT_EQ(r.verdict, Verdict::kUnknown) << i << ": " << r.reason;
    EXPECT_THAT(r.reason, HasSubstr(" checksum mismatch on ens1f0np0's module: stored 0x")) << i;
    EXPECT_THAT(r.reason, ::testing::EndsWith("; readings not judged")) << i;
  }
}

// No thresholds at all (flat memory): readings are reported, not judged, and the reason says why;
// never "every reading inside the module's warning thresholds".
TEST(OpticsCheckTest, AModuleWithoutThresholdsIsReportedNotJudged) {
  ModuleDom m = Qsfp();
  m.temperature_thresholds_c.reset();
  m.voltage_thresholds_v.reset();
  m.tx_bias_thresholds_ma.reset();
  m.tx_power_thresholds_mw.reset();
  m.rx_power_thresholds_mw.reset();
  m.no_thresholds_reason = "SFF-8636 flat memory (byte 2 bit 2 set): no page 03h, where the thresholds are";
  m.lanes[0].rx_power_mw = 0.0001;  // would be far below any alarm: no threshold says so
  CheckResult r = Judge(m);
  EXPECT_EQ(r.verdict, Verdict::kUnknown);
  EXPECT_EQ(r.reason, "QSFP28 Mellanox MMA1B00-C100D: readings reported but not judged (41.5 C): the module gives no "
                      "thresholds to judge them by (SFF-8636 flat memory (byte 2 bit 2 set): no page 03h, where the "
                      "thresholds are); none of its own alarm or warning flags is set");
  EXPECT_THAT(r.reason, ::testing::Not(HasSubstr("inside the module's warning thresholds")));
  // Its own flags are still its own judgement.
  m.lanes[0].rx_power_flags = ModuleFlags{false, true, false, false};
  r = Judge(m);
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_THAT(r.reason, ::testing::EndsWith("; no thresholds to judge the readings by (SFF-8636 flat memory (byte 2 "
                                            "bit 2 set): no page 03h, where the thresholds are)"));
  // An SFP without alarms implemented has neither thresholds nor flags.
  ModuleDom sfp = Qsfp();
  sfp.identifier_name = "SFP";
  sfp.temperature_thresholds_c.reset();
  sfp.voltage_thresholds_v.reset();
  sfp.tx_bias_thresholds_ma.reset();
  sfp.tx_power_thresholds_mw.reset();
  sfp.rx_power_thresholds_mw.reset();
  sfp.temperature_flags.reset();
  sfp.voltage_flags.reset();
  for (ModuleLane& l : sfp.lanes) l.rx_power_flags = l.tx_power_flags = l.tx_bias_flags = std::nullopt;
  sfp.no_thresholds_reason = "SFF-8472 A0h byte 93 bit 7 clear: the module implements no alarm and warning thresholds";
  r = Judge(sfp);
  EXPECT_EQ(r.verdict, Verdict::kUnknown);
  EXPECT_EQ(r.reason, "SFP Mellanox MMA1B00-C100D: readings reported but not judged (41.5 C): the module gives no "
                      "thresholds to judge them by (SFF-8472 A0h byte 93 bit 7 clear: the module implements no alarm "
                      "and warning thresholds)");
}

TEST(OpticsCheckTest, LatchedFlagsCountWhenTheReadingIsBackInside) {
  ModuleDom m = Qsfp();
  m.lanes[1].rx_power_flags = ModuleFlags{false, true, false, true};
  CheckResult r = Judge(m);
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_EQ(r.reason, "QSFP28 Mellanox MMA1B00-C100D: lane 2 RX power low alarm flag set (latched since the last read), "
                      "now -1.55 dBm (0.7000 mW)");
  m = Qsfp();
  m.temperature_flags = ModuleFlags{false, false, true, false};
  EXPECT_EQ(Judge(m).verdict, Verdict::kWarning);
}

// Corpus 82's shape: a 40G SR4 with every transmitter off (bias and TX power 0, RX 0): nothing
// to judge on those lanes, and they are named.
TEST(OpticsCheckTest, LanesWithLasersOffAreNotJudged) {
  ModuleDom m = Qsfp();
  for (int i : {2, 3}) {
    m.lanes[static_cast<std::size_t>(i)].laser_off = true;
    m.lanes[static_cast<std::size_t>(i)].tx_bias_ma = 0;
    m.lanes[static_cast<std::size_t>(i)].tx_power_mw = 0;
    m.lanes[static_cast<std::size_t>(i)].rx_power_mw = 0;
  }
  CheckResult r = Judge(m);
  EXPECT_EQ(r.verdict, Verdict::kOk);
  EXPECT_THAT(r.reason, HasSubstr("; laser off on lane 3, 4 (not judged)"));
}

TEST(OpticsCheckTest, ThresholdsLeftAtZeroAreNotUsed) {
  ModuleDom m = Qsfp();
  m.rx_power_thresholds_mw = ModuleThresholds{};
  m.lanes[0].rx_power_mw = 0.001;
  CheckResult r = Judge(m);
  EXPECT_EQ(r.verdict, Verdict::kOk);
  EXPECT_EQ(r.reason, "QSFP28 Mellanox MMA1B00-C100D: every reading that has thresholds is inside its warning "
                      "thresholds (41.5 C); no thresholds for RX power (not judged)");
  // Every threshold left at 0: nothing is judged.
  m.temperature_thresholds_c = m.voltage_thresholds_v = m.tx_bias_thresholds_ma = m.tx_power_thresholds_mw =
      ModuleThresholds{};
  r = Judge(m);
  EXPECT_EQ(r.verdict, Verdict::kUnknown);
  EXPECT_THAT(r.reason, HasSubstr("no thresholds to judge them by (its thresholds are all 0 (unusable))"));
}

TEST(OpticsCheckTest, CopperIsOkAndNoDiagnosticsUnknown) {
  ModuleDom dac;
  dac.identifier_name = "QSFP28";
  dac.vendor_name = "Mellanox";
  dac.vendor_part_number = "MCP1600-C003";
  dac.no_dom_reason = "copper cable (transmitter technology 10 in SFF-8636 byte 147): no optical diagnostics";
  CheckResult r = Judge(dac);
  EXPECT_EQ(r.verdict, Verdict::kOk);
  EXPECT_EQ(r.reason, "QSFP28 Mellanox MCP1600-C003: copper cable (transmitter technology 10 in SFF-8636 byte 147): "
                      "no optical diagnostics, no optics to monitor");
  ModuleDom sfp;
  sfp.identifier_name = "SFP";
  sfp.no_dom_reason = "no digital diagnostics (SFF-8472 A0h byte 92 bit 6 clear)";
  r = Judge(sfp);
  EXPECT_EQ(r.verdict, Verdict::kUnknown);
  EXPECT_EQ(r.reason, "SFP: no digital diagnostics (SFF-8472 A0h byte 92 bit 6 clear)");
}

}  // namespace
}  // namespace rdmahd
