#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "core/check.h"
#include "core/collection_engine.h"
#include "collectors/roce_qos.h"
#include "tests/support/test_paths.h"

namespace rdmahd {
namespace {

// The policy of tests/fixtures/roce/pfc-off/config.yaml.
std::shared_ptr<Config> FixturePolicy() {
  auto c = std::make_shared<Config>();
  c->Section<RocePolicy>().priority = 3;
  c->Section<RocePolicy>().dscp = 26;
  c->Section<RocePolicy>().trust = TrustMode::kDscp;
  c->Section<RocePolicy>().require_ecn = true;
  c->Section<RocePolicy>().min_mtu = 4200;
  return c;
}

std::vector<CheckResult> RoceVerdicts(const std::shared_ptr<const Config>& config) {
  CollectionEngine engine(NodeFs(testing::ProjectFixture("roce/pfc-off/sys"),
                                 testing::ProjectFixture("roce/pfc-off/proc"),
                                 testing::ProjectFixture("roce/pfc-off/dcb")),
                          {"netdev", "roce"});
  auto report = engine.Collect(config);
  std::vector<CheckResult> out;
  for (const auto& v : report->verdicts) {
    if (v.check.starts_with("roce_")) out.push_back(v.ToResult());
  }
  return out;
}

std::string Text(const std::vector<CheckResult>& verdicts) {
  std::string out;
  for (const auto& v : verdicts) {
    out += v.check + " " + v.subject + " " + std::string(VerdictName(v.verdict)) + ": " + v.reason + "\n";
    if (!v.fix.empty()) out += "  fix: " + v.fix + "\n";
  }
  return out;
}

const CheckResult* Find(const std::vector<CheckResult>& v, const std::string& check, const std::string& subject) {
  for (const auto& r : v) {
    if (r.check == check && r.subject == subject) return &r;
  }
  return nullptr;
}

TEST(RoceChecksTest, PfcOffFixtureGolden) {
  auto verdicts = RoceVerdicts(FixturePolicy());
  const CheckResult* pfc = Find(verdicts, "roce_pfc_priority", "ens1f0np0");
  ASSERT_NE(pfc, nullptr);
  EXPECT_EQ(pfc->verdict, Verdict::kFailed);
  EXPECT_NE(pfc->reason.find("PFC is off on RoCE priority 3 (enabled: 4)"), std::string::npos) << pfc->reason;
  EXPECT_EQ(pfc->fix, "dcb pfc set dev ens1f0np0 prio-pfc 3:on");

  const std::string text = Text(verdicts);
  const std::string golden_path = testing::ProjectFixture("roce/pfc-off/expected_check_roce.txt");
  if (std::getenv("RDMAHD_UPDATE_GOLDEN") != nullptr) std::ofstream(golden_path) << text;
  auto golden = ReadRegularFile(golden_path, std::size_t{1} << 20);
  ASSERT_TRUE(golden.ok()) << golden.error().message << " (RDMAHD_UPDATE_GOLDEN=1 writes it)";
  EXPECT_EQ(text, *golden);
}

TEST(RoceChecksTest, EveryFixtureVerdictHasTheExpectedStatus) {
  auto v = RoceVerdicts(FixturePolicy());
  struct Want {
    const char* check;
    const char* subject;
    Verdict verdict;
    const char* fix;
  } wants[] = {
      {"roce_pfc_priority", "ens1f1np1", Verdict::kOk, ""},
      {"roce_pfc_other_priorities", "ens1f0np0", Verdict::kWarning, "dcb pfc set dev ens1f0np0 prio-pfc 4:off"},
      {"roce_pfc_other_priorities", "ens1f1np1", Verdict::kOk, ""},
      {"roce_global_pause", "ens1f0np0", Verdict::kFailed, "ethtool -A ens1f0np0 rx off tx off"},
      {"roce_global_pause", "ens1f1np1", Verdict::kOk, ""},
      {"roce_trust", "ens1f0np0", Verdict::kOk, ""},
      {"roce_ecn", "ens1f0np0", Verdict::kFailed, "echo 1 > /sys/class/net/ens1f0np0/ecn/roce_rp/enable/3"},
      {"roce_ecn", "ens1f1np1", Verdict::kUnknown, ""},
      {"roce_mtu", "ens1f0np0", Verdict::kFailed, "ip link set dev ens1f0np0 mtu 4200"},
      {"roce_mtu", "ens1f1np1", Verdict::kOk, ""},
      {"roce_pause_storm", "ens1f0np0", Verdict::kWarning, nullptr},
      {"roce_pause_storm", "ens1f1np1", Verdict::kOk, ""},
  };
  for (const Want& w : wants) {
    const CheckResult* r = Find(v, w.check, w.subject);
    ASSERT_NE(r, nullptr) << w.check << " " << w.subject;
    EXPECT_EQ(r->verdict, w.verdict) << w.check << " " << w.subject << ": " << r->reason;
    if (w.fix != nullptr) {
      EXPECT_EQ(r->fix, w.fix) << w.check << " " << w.subject;
    }
  }
}

TEST(RoceChecksTest, NoPolicyMeansNotConfiguredButFactsStillCollected) {
  auto config = std::make_shared<Config>();  // built-in defaults: no roce.priority
  auto v = RoceVerdicts(config);
  for (const char* check : {"roce_pfc_priority", "roce_pfc_other_priorities", "roce_ecn"}) {
    const CheckResult* r = Find(v, check, "ens1f0np0");
    ASSERT_NE(r, nullptr) << check;
    EXPECT_EQ(r->verdict, Verdict::kUnknown) << check;
    EXPECT_EQ(r->reason, "not configured (roce.priority)") << check;
  }
  EXPECT_EQ(Find(v, "roce_trust", "ens1f0np0")->reason, "not configured (roce.trust)");
  EXPECT_EQ(Find(v, "roce_mtu", "ens1f0np0")->reason, "not configured (roce.min_mtu)");
  // Policy-free checks still judge.
  EXPECT_EQ(Find(v, "roce_global_pause", "ens1f0np0")->verdict, Verdict::kFailed);
}

// ---- single checks on hand-made facts --------------------------------------------------------------
PfcConfig Pfc(std::uint8_t mask) {
  PfcConfig p;
  p.pfc_cap = 8;
  p.enabled_mask = mask;
  return p;
}

std::vector<CheckResult> Evaluate(const std::string& check, const Snapshot& s, const Config& c) {
  return RunRegisteredCheck(check, s, c);
}

Snapshot WithDcb(std::optional<DcbState> dcb) {
  RoceQosFacts facts;
  RoceNetdevFacts f;
  f.netdev = "eth9";
  if (dcb) {
    f.trust = DeriveTrust(*dcb);
    f.dscp_priority = DscpPriorityMap(*dcb);
  } else {
    f.dcb_note = "eth9: RTM_GETDCB: No such device";
  }
  if (dcb) f.dcb = std::make_shared<const DcbState>(*dcb);
  facts.netdevs.push_back(f);
  Snapshot s;
  s.Put(facts);
  return s;
}

TEST(RoceChecksTest, TrustPcpWhenDscpWantedFailsWithAddCommand) {
  DcbState st;
  st.pfc = Pfc(0x08);
  st.app = std::vector<DcbAppEntry>{};
  auto v = Evaluate("roce_trust", WithDcb(st), *FixturePolicy());
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].verdict, Verdict::kFailed);
  EXPECT_EQ(v[0].fix, "dcb app add dev eth9 dscp-prio 26:3");
}

TEST(RoceChecksTest, DscpMappedToWrongPriorityFailsWithReplace) {
  DcbState st;
  st.app = std::vector<DcbAppEntry>{{kAppSelectorDscp, 26, 5}};
  auto v = Evaluate("roce_trust", WithDcb(st), *FixturePolicy());
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].verdict, Verdict::kFailed);
  EXPECT_NE(v[0].reason.find("DSCP 26 maps to priority 5"), std::string::npos) << v[0].reason;
  EXPECT_EQ(v[0].fix, "dcb app replace dev eth9 dscp-prio 26:3");
  // Policy pcp with DSCP entries present.
  Config pcp = *FixturePolicy();
  pcp.Section<RocePolicy>().trust = TrustMode::kPcp;
  auto w = Evaluate("roce_trust", WithDcb(st), pcp);
  EXPECT_EQ(w[0].verdict, Verdict::kFailed);
  EXPECT_EQ(w[0].fix, "dcb app flush dev eth9 dscp-prio");
}

TEST(RoceChecksTest, UnreadableOrUnsupportedDcbIsUnknownNeverOff) {
  auto unread = Evaluate("roce_pfc_priority", WithDcb(std::nullopt), *FixturePolicy());
  ASSERT_EQ(unread.size(), 1u);
  EXPECT_EQ(unread[0].verdict, Verdict::kUnknown);
  EXPECT_NE(unread[0].reason.find("No such device"), std::string::npos);
  DcbState none;
  none.supported = false;
  auto unsupported = Evaluate("roce_pfc_priority", WithDcb(none), *FixturePolicy());
  EXPECT_EQ(unsupported[0].verdict, Verdict::kUnknown);
  auto trust = Evaluate("roce_trust", WithDcb(none), *FixturePolicy());
  EXPECT_EQ(trust[0].verdict, Verdict::kUnknown);
}

TEST(RoceChecksTest, PfcOnRocePriorityOnlyIsOk) {
  DcbState st;
  st.pfc = Pfc(0x08);
  EXPECT_EQ(Evaluate("roce_pfc_priority", WithDcb(st), *FixturePolicy())[0].verdict, Verdict::kOk);
  EXPECT_EQ(Evaluate("roce_pfc_other_priorities", WithDcb(st), *FixturePolicy())[0].verdict, Verdict::kOk);
  st.pfc->enabled_mask = 0x18;
  auto other = Evaluate("roce_pfc_other_priorities", WithDcb(st), *FixturePolicy());
  EXPECT_EQ(other[0].verdict, Verdict::kWarning);
  EXPECT_EQ(other[0].fix, "dcb pfc set dev eth9 prio-pfc 4:off");
}

}  // namespace
}  // namespace rdmahd
