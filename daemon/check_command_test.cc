#include "daemon/check_command.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

namespace rdmahd {
namespace {

Report MakeReport(std::vector<Verdict> verdicts, bool collector_ok = true) {
  Report r;
  int i = 0;
  for (Verdict v : verdicts) {
    r.verdicts.push_back({"port_active", "mlx5_" + std::to_string(i++) + "/1", v,
                          v == Verdict::kOk ? "ACTIVE, LinkUp" : "state 1: DOWN",
                          v == Verdict::kOk ? "" : "check the cable"});
  }
  CollectorOutcome o;
  o.collector = "devices";
  o.success = collector_ok;
  if (!collector_ok) o.errors.push_back("opendir /sys/class/infiniband: Permission denied");
  r.snapshot.outcomes.push_back(o);
  return r;
}

TEST(CheckCommandTest, ExitCodesFollowTheNodeProblemDetectorConvention) {
  EXPECT_EQ(CheckExitCode(MakeReport({Verdict::kOk, Verdict::kUnknown}), false), 0);
  EXPECT_EQ(CheckExitCode(MakeReport({Verdict::kOk, Verdict::kFailed}), false), 1);
  EXPECT_EQ(CheckExitCode(MakeReport({Verdict::kWarning}), false), 0);
  EXPECT_EQ(CheckExitCode(MakeReport({Verdict::kWarning}), true), 1);
  EXPECT_EQ(CheckExitCode(MakeReport({Verdict::kOk}, /*collector_ok=*/false), false), 2);
  // A known failure outranks "could not run everything".
  EXPECT_EQ(CheckExitCode(MakeReport({Verdict::kFailed}, false), false), 1);
}

TEST(CheckCommandTest, TableShowsReasonFixAndSummary) {
  std::ostringstream out;
  PrintCheckTable(MakeReport({Verdict::kOk, Verdict::kFailed}, false), out);
  std::string s = out.str();
  EXPECT_NE(s.find("mlx5_1/1"), std::string::npos);
  EXPECT_NE(s.find("failed   state 1: DOWN"), std::string::npos);
  EXPECT_NE(s.find("fix: check the cable"), std::string::npos);
  EXPECT_EQ(s.find("fix: \n"), std::string::npos);  // ok rows carry no fix line
  EXPECT_NE(s.find("collector devices failed: opendir /sys/class/infiniband: Permission denied"),
            std::string::npos);
  EXPECT_NE(s.find("1 ok, 0 warning, 1 failed, 0 unknown"), std::string::npos);
}

TEST(CheckCommandTest, JsonCarriesEveryVerdictAndTheExitCode) {
  std::ostringstream out;
  PrintCheckJson(MakeReport({Verdict::kOk, Verdict::kFailed}), 1, out);
  auto j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j["exit_code"], 1);
  ASSERT_EQ(j["verdicts"].size(), 2u);
  EXPECT_EQ(j["verdicts"][1]["status"], "failed");
  EXPECT_EQ(j["verdicts"][1]["fix"], "check the cable");
  EXPECT_EQ(j["summary"]["failed"], 1);
  EXPECT_EQ(j["collectors"][0]["collector"], "devices");
}

// The dump's error_handler_t::replace already does this; the test keeps it so (a scraper of the
// JSON must get one bad byte as U+FFFD, not an exception or a dropped report).
TEST(CheckCommandTest, JsonReplacesInvalidUtf8LikeTheMetrics) {
  Report r = MakeReport({Verdict::kFailed});
  r.verdicts[0].subject = "mlx5_\xff/1";
  r.verdicts[0].reason = "fw_ver 16.\xE2\x82 is old";
  r.snapshot.outcomes[0].errors.push_back("open /sys/x/\xC0\xAF: No such file");
  std::ostringstream out;
  PrintCheckJson(r, 1, out);
  auto j = nlohmann::json::parse(out.str());  // throws on invalid UTF-8
  EXPECT_EQ(j["verdicts"][0]["subject"], "mlx5_\uFFFD/1");
  EXPECT_EQ(j["verdicts"][0]["reason"], "fw_ver 16.\uFFFD is old");
  EXPECT_EQ(j["collectors"][0]["errors"][0], "open /sys/x/\uFFFD\uFFFD: No such file");
}

}  // namespace
}  // namespace rdmahd
