#include "daemon/check_command.h"

#include "common/excerpt.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <sstream>

#include "tests/support/blocking_collector.h"
#include "tests/support/test_paths.h"

namespace rdmahd {
namespace {

std::vector<CheckResult> MakeVerdicts(std::vector<Verdict> verdicts) {
  std::vector<CheckResult> out;
  int i = 0;
  for (Verdict v : verdicts) {
    out.push_back({"port_active", "mlx5_" + std::to_string(i++) + "/1", v,
                   v == Verdict::kOk ? "ACTIVE, LinkUp" : "state 1: DOWN", v == Verdict::kOk ? "" : "check the cable"});
  }
  return out;
}

Report ReportOf(const std::vector<CheckResult>& verdicts, bool collector_ok = true) {
  Report r;
  r.verdicts = VerdictList(verdicts);
  CollectorOutcome o;
  o.collector = "devices";
  o.success = collector_ok;
  if (!collector_ok) o.errors.push_back("opendir /sys/class/infiniband: Permission denied");
  r.snapshot.outcomes.push_back(o);
  return r;
}

Report MakeReport(std::vector<Verdict> verdicts, bool collector_ok = true) {
  return ReportOf(MakeVerdicts(std::move(verdicts)), collector_ok);
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
  EXPECT_EQ(j["verdicts"][0]["status"], "failed");  // worst first
  EXPECT_EQ(j["verdicts"][0]["fix"], "check the cable");
  EXPECT_EQ(j["verdicts"][1]["status"], "ok");
  EXPECT_EQ(j["summary"]["failed"], 1);
  EXPECT_EQ(j["collectors"][0]["collector"], "devices");
}

TEST(CheckCommandTest, JsonHasTheSchemaVersionFirst) {
  std::ostringstream out;
  PrintCheckJson(MakeReport({Verdict::kOk}), 0, out);
  EXPECT_EQ(out.str().rfind("{\n  \"schema_version\": 1,\n  \"version\": \"", 0), 0u) << out.str();
}

TEST(CheckCommandTest, SummaryLineSaysTheVerdictThenTheWorstFirst) {
  Report r = MakeReport({Verdict::kOk, Verdict::kWarning, Verdict::kFailed, Verdict::kUnknown});
  EXPECT_EQ(CheckSummaryLine(r, kExitFailed),
            "RDMA unhealthy: 1 failed, 1 warning: port_active mlx5_2/1; port_active mlx5_1/1 (warning)");
  Report ok = MakeReport({Verdict::kOk, Verdict::kOk, Verdict::kUnknown});
  EXPECT_EQ(CheckSummaryLine(ok, kExitOk), "RDMA healthy: 2 checks ok, 1 unknown");
  Report warned = MakeReport({Verdict::kOk, Verdict::kWarning});
  EXPECT_EQ(CheckSummaryLine(warned, kExitOk), "RDMA healthy: 1 check ok, 1 warning: port_active mlx5_1/1 (warning)");
  Report broken = MakeReport({Verdict::kOk}, /*collector_ok=*/false);
  EXPECT_EQ(CheckSummaryLine(broken, kExitCouldNotRun, {"no class/infiniband"}),
            "RDMA health unknown: no class/infiniband; collector devices failed: opendir /sys/class/infiniband: "
            "Permission denied");
}

TEST(CheckCommandTest, SummaryLineIsBoundedPrintableAscii) {
  std::vector<CheckResult> verdicts = MakeVerdicts(std::vector<Verdict>(50, Verdict::kFailed));
  for (std::size_t i = 0; i < verdicts.size(); ++i) verdicts[i].reason += " (" + std::to_string(i) + ")";  // 50 rows
  verdicts[0].subject = "mlx5_\xff\n\x1b[2J\xe2\x80\xae/1";
  const Report r = ReportOf(verdicts);
  const std::string line = CheckSummaryLine(r, kExitFailed);
  EXPECT_LE(line.size(), kCheckSummaryBytes);
  EXPECT_TRUE(std::all_of(line.begin(), line.end(), [](char c) { return c >= 0x20 && c < 0x7f; })) << line;
  EXPECT_NE(line.find("port_active mlx5_???[2J??" "?/1"), std::string::npos) << line;
  EXPECT_NE(line.find(" more"), std::string::npos) << line;  // "+N more" says what did not fit
  EXPECT_EQ(line.rfind("RDMA unhealthy: 50 failed, 0 warnings: ", 0), 0u) << line;
}

// The dump's error_handler_t::replace already does this; the test keeps it so (a scraper of the
// JSON must get one bad byte as U+FFFD, not an exception or a dropped report).
TEST(CheckCommandTest, JsonReplacesInvalidUtf8LikeTheMetrics) {
  std::vector<CheckResult> verdicts = MakeVerdicts({Verdict::kFailed});
  verdicts[0].subject = "mlx5_\xff/1";
  verdicts[0].reason = "fw_ver 16.\xE2\x82 is old";
  Report r = ReportOf(verdicts);
  r.snapshot.outcomes[0].errors.push_back("open /sys/x/\xC0\xAF: No such file");
  std::ostringstream out;
  PrintCheckJson(r, 1, out);
  auto j = nlohmann::json::parse(out.str());  // throws on invalid UTF-8
  EXPECT_EQ(j["verdicts"][0]["subject"], "mlx5_\uFFFD/1");
  EXPECT_EQ(j["verdicts"][0]["reason"], "fw_ver 16.\uFFFD is old");
  EXPECT_EQ(j["collectors"][0]["errors"][0], "open /sys/x/\uFFFD\uFFFD: No such file");
}

// (The devices collector alone: this binary also registers test collectors, one always failing.)
TEST(CheckCommandTest, SysfsRootWithoutRdmaClassExitsTwoAndSaysWhy) {
  testing::TempDir dir;
  dir.Write("dcb/.keep", "");
  Options options;
  options.sysfs = "/nonexistent";
  options.procfs = "/nonexistent";
  options.dcb_dir = dir.path() + "/dcb";
  const std::string why =
      "/nonexistent/class/infiniband does not exist: --path.sysfs=/nonexistent is not a sysfs tree, "
      "or the RDMA core (ib_core) was not loaded where it was captured";
  {
    CollectionEngine engine(NodeFs(options.sysfs, options.procfs, options.dcb_dir), {"devices"});
    std::ostringstream out, err;
    EXPECT_EQ(RunCheckCommand(options, engine, out, err), kExitCouldNotRun) << out.str();
    EXPECT_NE(out.str().find("cannot judge this node: " + why + "\n"), std::string::npos) << out.str();
  }
  options.output = "json";
  CollectionEngine engine(NodeFs(options.sysfs, options.procfs, options.dcb_dir), {"devices"});
  std::ostringstream out, err;
  EXPECT_EQ(RunCheckCommand(options, engine, out, err), kExitCouldNotRun);
  auto j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j["exit_code"], 2);
  EXPECT_EQ(j["problems"], nlohmann::json::array({why}));
}

TEST(CheckCommandTest, ProblemsExitTwoUnlessACheckFailed) {
  EXPECT_EQ(CheckExitCode(MakeReport({Verdict::kOk}), false, {"no RDMA class"}), 2);
  EXPECT_EQ(CheckExitCode(MakeReport({Verdict::kFailed}), false, {"no RDMA class"}), 1);
}

TEST(CheckCommandTest, StuckCollectorEndsTheCommandAtTheDeadlineWithExitTwo) {
  testing::TempDir dir;
  dir.Write("config.yaml", "scrape:\n  collection_timeout: 200ms\n");
  Options options;
  options.config_file = dir.path() + "/config.yaml";
  auto gate = std::make_shared<testing::Gate>();
  EnginePlugins plugins;
  plugins.collectors.push_back({"roce", std::make_unique<testing::BlockingCollector>(gate)});
  CollectionEngine engine(NodeFs("/nonexistent", "/nonexistent"), std::move(plugins));
  std::ostringstream out, err;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(RunCheckCommand(options, engine, out, err), kExitCouldNotRun);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  EXPECT_NE(out.str().find("collector roce failed: collector roce did not finish within 200ms\n"),
            std::string::npos) << out.str();
  EXPECT_EQ(engine.busy_collector(), "roce");
  gate->Open();
}

// A report whose every text field carries something a terminal would act on: a newline that
// would print a fake row, CR, ESC sequences, DEL, a C1 CSI, a bidi override, an invalid byte.
Report HostileReport() {
  std::vector<CheckResult> verdicts = MakeVerdicts({Verdict::kFailed});
  CheckResult& v = verdicts[0];
  v.check = "port_active\x1b[2J";
  v.subject = "eth0\nport_active  mlx5_9/1  ok       fake row";
  v.reason = "state 1: DOWN\r\x7f\xc2\x9b" "31m";
  v.fix = "check the cable\x1b]0;title\x07 \xe2\x80\xae" "txt.exe \xff";
  Report r = ReportOf(verdicts, /*collector_ok=*/false);
  r.snapshot.outcomes[0].collector = "dev\tices";
  r.snapshot.outcomes[0].errors.back() = "open /sys/x\ny: No such file";
  return r;
}

TEST(CheckCommandTest, TableEscapesControlCharactersInEveryField) {
  std::ostringstream out;
  PrintCheckTable(HostileReport(), out, {"a problem\r\nwith a newline"});
  const std::string s = out.str();
  // Header, the row, its fix, the collector line, the problem, a blank line and the summary.
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 7) << s;
  for (char c : s) {
    const auto b = static_cast<unsigned char>(c);
    EXPECT_TRUE(b == '\n' || (b >= 0x20 && b < 0x7F)) << "raw byte " << int{b} << " in\n" << s;
  }
  EXPECT_NE(s.find("port_active\\x1b[2J"), std::string::npos) << s;
  EXPECT_NE(s.find("eth0\\nport_active  mlx5_9/1  ok       fake row"), std::string::npos) << s;
  EXPECT_NE(s.find("state 1: DOWN\\r\\x7f\\u009b31m\n"), std::string::npos) << s;
  EXPECT_NE(s.find("fix: check the cable\\x1b]0;title\\x07 \\u202etxt.exe \\xff\n"), std::string::npos) << s;
  EXPECT_NE(s.find("collector dev\\tices failed: open /sys/x\\ny: No such file\n"), std::string::npos) << s;
  EXPECT_NE(s.find("cannot judge this node: a problem\\r\\nwith a newline\n"), std::string::npos) << s;
}

TEST(CheckCommandTest, TerminalTextKeepsPrintableTextAndShowsBackslashesUnambiguously) {
  EXPECT_EQ(TerminalText("mlx5_0/1 ens1f0np0: PFC 3:on, 1.5 µs"), "mlx5_0/1 ens1f0np0: PFC 3:on, 1.5 µs");
  EXPECT_EQ(TerminalText("a\\nb"), "a\\\\nb");  // a literal backslash-n is not a newline
  EXPECT_EQ(TerminalText(std::string("nul\0byte", 8)), "nul\\x00byte");
  EXPECT_EQ(TerminalText("\xe2\x80\xa8\xe2\x81\xa6\xd8\x9c"), "\\u2028\\u2066\\u061c");
  EXPECT_EQ(TerminalText("\xc0\xaf\xe2\x82"), "\\xc0\\xaf\\xe2\\x82");  // overlong, truncated
}

// Columns line up by characters: a subject with a 2-byte character is as wide as it looks.
TEST(CheckCommandTest, TableColumnsCountCharactersNotBytes) {
  std::vector<CheckResult> verdicts = MakeVerdicts({Verdict::kOk, Verdict::kOk});
  verdicts[0].subject = "ab";
  verdicts[1].subject = "\xc3\xa9";  // é
  verdicts[1].reason = "ACTIVE, LinkUp (2)";  // its own row
  const Report r = ReportOf(verdicts);
  std::ostringstream out;
  PrintCheckTable(r, out);
  std::istringstream lines(out.str());
  std::string header, row0, row1;
  std::getline(lines, header);
  std::getline(lines, row0);
  std::getline(lines, row1);
  EXPECT_EQ(row0.find("ok"), header.find("STATUS"));
  EXPECT_EQ(row1.find("ok") - 1, header.find("STATUS")) << row1;  // one byte more than characters
}

// nlohmann escapes control characters in JSON strings; the dump is ASCII, so a bidi override or a
// C1 control reaches a terminal as \uNNNN too, and a parser reads every string back unchanged.
TEST(CheckCommandTest, JsonEscapesControlCharacters) {
  const Report r = HostileReport();
  std::ostringstream out;
  PrintCheckJson(r, 1, out, {"a problem\r\nwith a newline"});
  const std::string s = out.str();
  for (char c : s) {
    const auto b = static_cast<unsigned char>(c);
    EXPECT_TRUE(b == '\n' || (b >= 0x20 && b < 0x7F)) << "raw byte " << int{b} << " in\n" << s;
  }
  EXPECT_NE(s.find(R"("subject": "eth0\nport_active  mlx5_9/1  ok       fake row")"), std::string::npos) << s;
  auto j = nlohmann::json::parse(s);
  EXPECT_EQ(j["verdicts"][0]["check"], r.verdicts[0].check);
  EXPECT_EQ(j["verdicts"][0]["subject"], r.verdicts[0].subject);
  EXPECT_EQ(j["verdicts"][0]["reason"], r.verdicts[0].reason);
  EXPECT_EQ(j["verdicts"][0]["fix"], "check the cable\x1b]0;title\x07 \xe2\x80\xae" "txt.exe \uFFFD");
  EXPECT_EQ(j["collectors"][0]["errors"].back(), r.snapshot.outcomes[0].errors.back());
  EXPECT_EQ(j["problems"][0], "a problem\r\nwith a newline");
}

// A node with a dead NIC, a port with errors and four ports without the RoCE ToS, as the engine
// lists its verdicts (by check name).
Report MixedReport() {
  std::vector<CheckResult> v;
  v.push_back({"cpu_governor", "mlx5_0", Verdict::kWarning, "powersave on 2 CPUs", "cpupower frequency-set -g performance"});
  v.push_back({"nic_health", "mlx5_2", Verdict::kFailed, "Fatal error 1 detected", "devlink dev reload pci/0000:3b:00.0"});
  v.push_back({"port_active", "mlx5_0/1", Verdict::kOk, "ACTIVE", ""});
  v.push_back({"port_errors", "mlx5_1/1", Verdict::kFailed, "symbol_error +200 in 60 s", "reseat the cable"});
  v.push_back({"roce_ecn", "ens1f0", Verdict::kUnknown, "no /sys/class/net/ens1f0/ecn", ""});
  v.push_back({"roce_ecn", "ens1f1", Verdict::kUnknown, "no /sys/class/net/ens1f1/ecn", ""});
  for (const char* dev : {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"}) {
    v.push_back({"roce_tos", std::string(dev) + "/1", Verdict::kFailed, "default ToS 0 = DSCP 0, policy DSCP is 26",
                 std::string("echo 106 > /sys/kernel/config/rdma_cm/") + dev + "/ports/1/default_roce_tos"});
  }
  return ReportOf(v);
}

TEST(CheckCommandTest, TableListsFailedByCostThenWarningUnknownOkAndGroupsIdenticalVerdicts) {
  std::ostringstream out;
  PrintCheckTable(MixedReport(), out);
  std::istringstream lines(out.str());
  std::vector<std::string> rows;
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line[0] != ' ') rows.push_back(line.substr(0, line.find("  ")));
  }
  // The fatal NIC first, then the errors, then the configuration; then warning, unknown, ok.
  EXPECT_EQ(rows, (std::vector<std::string>{"CHECK", "nic_health", "port_errors", "roce_tos", "cpu_governor",
                                            "roce_ecn", "port_active", "1 ok, 1 warning, 6 failed, 2 unknown"}))
      << out.str();
  const std::string s = out.str();
  // Four ports, one row; the fix names each port's device as <device>.
  EXPECT_NE(s.find("roce_tos      mlx5_0/1, mlx5_1/1, mlx5_2/1, mlx5_3/1  failed   default ToS 0 = DSCP 0, policy "
                   "DSCP is 26\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("fix: echo 106 > /sys/kernel/config/rdma_cm/<device>/ports/1/default_roce_tos\n"),
            std::string::npos) << s;
  EXPECT_NE(s.find("roce_ecn      ens1f0, ens1f1"), std::string::npos) << s;
  EXPECT_NE(s.find("no /sys/class/net/<subject>/ecn\n"), std::string::npos) << s;
}

TEST(CheckCommandTest, TableNamesEverySubjectOfALongGroupOnItsOwnLine) {
  std::vector<CheckResult> v;
  for (int i = 0; i < 16; ++i) {
    v.push_back({"roce_mtu", "ens" + std::to_string(i) + "f0np0", Verdict::kFailed, "MTU 1500 below 4200", "raise it"});
  }
  std::ostringstream out;
  PrintCheckTable(ReportOf(v), out);
  const std::string s = out.str();
  EXPECT_NE(s.find("roce_mtu  ens0f0np0 and 15 more  failed   MTU 1500 below 4200\n"), std::string::npos) << s;
  EXPECT_NE(s.find("subjects: ens0f0np0, ens1f0np0, ens2f0np0,"), std::string::npos) << s;
  EXPECT_NE(s.find(", ens15f0np0\n"), std::string::npos) << s;
}

TEST(CheckCommandTest, JsonListsEveryVerdictWorstFirstByCost) {
  std::ostringstream out;
  PrintCheckJson(MixedReport(), 1, out);
  auto j = nlohmann::json::parse(out.str());
  std::vector<std::string> order;
  for (const auto& v : j["verdicts"]) order.push_back(v["check"].get<std::string>() + " " + v["subject"].get<std::string>());
  EXPECT_EQ(order, (std::vector<std::string>{"nic_health mlx5_2", "port_errors mlx5_1/1", "roce_tos mlx5_0/1",
                                             "roce_tos mlx5_1/1", "roce_tos mlx5_2/1", "roce_tos mlx5_3/1",
                                             "cpu_governor mlx5_0", "roce_ecn ens1f0", "roce_ecn ens1f1",
                                             "port_active mlx5_0/1"}));
  // JSON keeps one entry per verdict, each with its own fix.
  EXPECT_EQ(j["verdicts"][5]["fix"], "echo 106 > /sys/kernel/config/rdma_cm/mlx5_3/ports/1/default_roce_tos");
}

TEST(CheckCommandTest, SummaryLineListsTheCostliestFirstAndGroupsSubjects) {
  EXPECT_EQ(CheckSummaryLine(MixedReport(), kExitFailed),
            "RDMA unhealthy: 6 failed, 1 warning: nic_health mlx5_2; port_errors mlx5_1/1; "
            "roce_tos mlx5_0/1,mlx5_1/1,mlx5_2/1,mlx5_3/1; cpu_governor mlx5_0 (warning)");
  std::vector<CheckResult> v;
  for (int i = 0; i < 16; ++i) {
    v.push_back({"roce_mtu", "ens" + std::to_string(i) + "f0np0", Verdict::kFailed, "MTU 1500 below 4200", ""});
  }
  EXPECT_EQ(CheckSummaryLine(ReportOf(v), kExitFailed),
            "RDMA unhealthy: 16 failed, 0 warnings: roce_mtu ens0f0np0,ens1f0np0,ens2f0np0,ens3f0np0,ens4f0np0,ens5f0np0,+10");
}

TEST(CheckCommandTest, CouldNotRunLineIsTheFirstLineOfTheReason) {
  EXPECT_EQ(CheckCouldNotRunLine("rdma-healthd: The following argument was not expected: --bogus\n"
                                 "Run with --help for more information.\n"),
            "RDMA health unknown: The following argument was not expected: --bogus");
  EXPECT_EQ(CheckCouldNotRunLine("/etc/x.yaml: No such file or directory"),
            "RDMA health unknown: /etc/x.yaml: No such file or directory");
  const std::string line = CheckCouldNotRunLine(std::string(1000, 'x') + "\x1b[2J");
  EXPECT_EQ(line.size(), kCheckSummaryBytes);
  const char* check[] = {"rdma-healthd", "--log.level=error", "check", "--bogus"};
  const char* daemon[] = {"rdma-healthd", "--config.file=x", "--", "check"};
  EXPECT_TRUE(InvokesCheck(4, check));
  EXPECT_FALSE(InvokesCheck(4, daemon));
}

TEST(CheckCommandTest, AMissingConfigFileExitsTwoWithItsReasonOnStdoutToo) {
  Options options;
  options.config_file = "/nonexistent/rdma-healthd.yaml";
  options.sysfs = "/nonexistent";
  options.procfs = "/nonexistent";
  options.output = "summary";
  CollectionEngine engine(NodeFs(options.sysfs, options.procfs), {"devices"});
  std::ostringstream out, err;
  EXPECT_EQ(RunCheckCommand(options, engine, out, err), kExitCouldNotRun);
  EXPECT_NE(err.str().find("/nonexistent/rdma-healthd.yaml"), std::string::npos) << err.str();
  // One line on stdout, what node-problem-detector shows as the condition's message.
  const std::string printed = out.str();
  EXPECT_EQ(printed.rfind("RDMA health unknown: ", 0), 0u) << printed;
  EXPECT_NE(printed.find("/nonexistent/rdma-healthd.yaml"), std::string::npos) << printed;
  EXPECT_EQ(std::count(printed.begin(), printed.end(), '\n'), 1) << printed;
}

}  // namespace
}  // namespace rdmahd
