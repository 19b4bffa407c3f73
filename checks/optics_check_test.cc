// optics on decoded modules (facts/module_facts.h): readings against the module's own thresholds,
// its flags, lanes with lasers off, modules without diagnostics. The collector test
// (collectors/module_eeprom_test.cc) runs it on pages decoded by parsers/module_eeprom.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/check.h"
#include "facts/module_facts.h"
#include "facts/netdev_facts.h"

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

TEST(OpticsCheckTest, AFailingLaserOutranksAWarningAndAllFindingsAreCounted) {
  ModuleDom m = Qsfp();
  m.temperature_c = 72;            // warning
  m.lanes[0].tx_bias_ma = 13.5;    // alarm
  m.lanes[1].tx_power_mw = 0.3;    // warning
  m.lanes[3].rx_power_mw = 0.08;   // warning
  CheckResult r = Judge(m);
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_EQ(r.reason, "QSFP28 Mellanox MMA1B00-C100D: lane 1 TX bias 13.50 mA at or above its high alarm 13.00 mA; "
                      "temperature 72.0 C at or above its high warning 70.0 C; lane 2 TX power -5.23 dBm (0.3000 mW) "
                      "at or below its low warning -5.00 dBm (0.3162 mW); and 1 more");
  EXPECT_THAT(r.fix, HasSubstr("laser is failing"));
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
  EXPECT_EQ(Judge(m).verdict, Verdict::kOk);
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
