#include <gtest/gtest.h>

#include <memory>

#include "core/check.h"
#include "collectors/rdma_devices.h"

namespace rdmahd {
namespace {

std::vector<CheckResult> Evaluate(const RdmaDeviceFacts& dev, const Config& config) {
  RdmaDevicesFacts facts;
  facts.devices.push_back(dev);
  Snapshot snapshot;
  snapshot.Put(facts);
  return RunRegisteredCheck("firmware_version", snapshot, config);
}

RdmaDeviceFacts ConnectX5(const std::string& fw) {
  RdmaDeviceFacts d;
  d.name = "mlx5_0";
  d.fw_ver = fw;
  d.hca_type = "MT4119";
  d.board_id = "MT_0000000008";
  return d;
}

Config Policy() {
  Config c;
  c.Section<FirmwarePolicy>().rules = {{"MT4099", "", "2.42.5000"},
                {"mt4119", "MT_0000000010", "16.40.1000"},  // other board: must not match
                {"MT4119", "", "16.35.2000"}};
  return c;
}

bool Has(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

TEST(FirmwareCheckTest, OlderThanTheFirstMatchingRuleFails) {
  auto out = Evaluate(ConnectX5("16.23.1020"), Policy());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].subject, "mlx5_0");
  EXPECT_EQ(out[0].verdict, Verdict::kFailed);
  EXPECT_TRUE(Has(out[0].reason, "16.23.1020")) << out[0].reason;
  EXPECT_TRUE(Has(out[0].reason, "16.35.2000")) << out[0].reason;  // the board-specific rule skipped
  EXPECT_TRUE(Has(out[0].fix, "mlxfwmanager")) << out[0].fix;
}

TEST(FirmwareCheckTest, EqualOrNewerIsOk) {
  EXPECT_EQ(Evaluate(ConnectX5("16.35.2000"), Policy())[0].verdict, Verdict::kOk);
  EXPECT_EQ(Evaluate(ConnectX5("16.35.10000"), Policy())[0].verdict, Verdict::kOk);  // numeric compare
}

TEST(FirmwareCheckTest, BoardIdRuleWinsWhenListedFirstAndMatching) {
  RdmaDeviceFacts d = ConnectX5("16.35.2000");
  d.board_id = "MT_0000000010";
  auto out = Evaluate(d, Policy());
  EXPECT_EQ(out[0].verdict, Verdict::kFailed);  // needs 16.40.1000 (hca_type matched case-insensitively)
}

TEST(FirmwareCheckTest, NoRuleOrNonNumericIsUnknown) {
  RdmaDeviceFacts bnxt;
  bnxt.name = "bnxt_re0";
  bnxt.fw_ver = "216.0.220.0";
  bnxt.hca_type = "BCM57508";
  auto none = Evaluate(bnxt, Policy());
  EXPECT_EQ(none[0].verdict, Verdict::kUnknown);
  EXPECT_TRUE(Has(none[0].reason, "no firmware policy for hca_type BCM57508")) << none[0].reason;

  Config c;
  c.Section<FirmwarePolicy>().rules = {{"", "", "1.2.3"}};  // matches any device
  RdmaDeviceFacts odd = ConnectX5("16.35.2000-LTS");
  auto out = Evaluate(odd, c);
  EXPECT_EQ(out[0].verdict, Verdict::kUnknown);
  EXPECT_TRUE(Has(out[0].reason, "not a dotted numeric version")) << out[0].reason;

  RdmaDeviceFacts unreadable = ConnectX5("");
  unreadable.fw_ver.reset();
  EXPECT_EQ(Evaluate(unreadable, c)[0].verdict, Verdict::kUnknown);

  EXPECT_EQ(Evaluate(bnxt, c)[0].verdict, Verdict::kOk);  // 216.0.220.0 >= 1.2.3
}

TEST(FirmwareCheckTest, MissingHcaTypeDoesNotMatchAnHcaTypeRule) {
  RdmaDeviceFacts hfi1;
  hfi1.name = "hfi1_0";
  hfi1.fw_ver = "1.27.0";
  Config c;
  c.Section<FirmwarePolicy>().rules = {{"MT4119", "", "16.35.2000"}};
  auto out = Evaluate(hfi1, c);
  EXPECT_EQ(out[0].verdict, Verdict::kUnknown);
  EXPECT_TRUE(Has(out[0].reason, "hca_type <none>")) << out[0].reason;
}

}  // namespace
}  // namespace rdmahd
