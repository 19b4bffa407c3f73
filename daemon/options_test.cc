#include "daemon/options.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace rdmahd {
namespace {

Options Parse(std::vector<const char*> args) {
  args.insert(args.begin(), "rdma-healthd");
  return ParseOptions(static_cast<int>(args.size()), args.data(), {"devices", "roce"});
}

TEST(OptionsTest, DefaultsAreTheDaemonOnBuiltInConfig) {
  Options o = Parse({});
  EXPECT_EQ(o.mode, Mode::kDaemon);
  EXPECT_EQ(o.listen_address, ":9872");
  EXPECT_EQ(o.sysfs, "/sys");
  EXPECT_EQ(o.procfs, "/proc");
  EXPECT_TRUE(o.config_file.empty());
  EXPECT_TRUE(o.collector_flags.empty());
}

TEST(OptionsTest, PrometheusStyleFlags) {
  Options o = Parse({"--web.listen-address=127.0.0.1:0", "--path.sysfs", "/tmp/sys",
                     "--config.file=/etc/x.yaml", "--log.format=json", "--log.level=debug"});
  EXPECT_EQ(o.listen_address, "127.0.0.1:0");
  EXPECT_EQ(o.sysfs, "/tmp/sys");
  EXPECT_EQ(o.config_file, "/etc/x.yaml");
  EXPECT_EQ(o.log_format, "json");
  EXPECT_EQ(o.log_level, "debug");
  EXPECT_TRUE(o.web_config_file.empty());
  EXPECT_EQ(Parse({"--web.config.file=/etc/rdma-healthd/web.yml"}).web_config_file, "/etc/rdma-healthd/web.yml");
}

TEST(OptionsTest, CollectorFlagsAreTriState) {
  Options o = Parse({"--no-collector.roce", "--collector.devices"});
  ASSERT_EQ(o.collector_flags.size(), 2u);
  EXPECT_FALSE(o.collector_flags.at("roce"));
  EXPECT_TRUE(o.collector_flags.at("devices"));

  Config c;
  c.collectors["roce"] = true;
  ApplyCollectorFlags(o, c);
  EXPECT_FALSE(c.CollectorEnabled("roce"));
}

TEST(OptionsTest, CheckSubcommandTakesOutputAndCommonFlags) {
  Options o = Parse({"check", "--output=json", "--path.sysfs=/fx/sys", "--fail-on-warning"});
  EXPECT_EQ(o.mode, Mode::kCheck);
  EXPECT_EQ(o.output, "json");
  EXPECT_EQ(o.sysfs, "/fx/sys");
  EXPECT_TRUE(o.fail_on_warning);
}

TEST(OptionsTest, CheckSampleIntervalIsZeroOrOneSecondToTenMinutes) {
  EXPECT_EQ(Parse({"check"}).sample_interval, std::chrono::milliseconds(0));
  EXPECT_EQ(Parse({"check", "--sample-interval=10s"}).sample_interval, std::chrono::milliseconds(10'000));
  EXPECT_EQ(Parse({"check", "--sample-interval", "1500ms"}).sample_interval, std::chrono::milliseconds(1500));
  EXPECT_EQ(Parse({"check", "--sample-interval=2m"}).sample_interval, std::chrono::milliseconds(120'000));
  EXPECT_EQ(Parse({"check", "--sample-interval=0"}).sample_interval, std::chrono::milliseconds(0));
  for (const char* bad : {"--sample-interval=10", "--sample-interval=500ms", "--sample-interval=11m",
                          "--sample-interval=-1s", "--sample-interval=nans"}) {
    Options o = Parse({"check", bad});
    EXPECT_EQ(o.mode, Mode::kExit) << bad;
    EXPECT_EQ(o.exit_code, 2) << bad;
    EXPECT_NE(o.exit_message.find("--sample-interval"), std::string::npos) << o.exit_message;
  }
}

TEST(OptionsTest, CheckConfigBothSpellings) {
  Options a = Parse({"check-config", "/etc/a.yaml"});
  EXPECT_EQ(a.mode, Mode::kCheckConfig);
  EXPECT_EQ(a.config_file, "/etc/a.yaml");
  Options b = Parse({"--check-config=/etc/b.yaml"});
  EXPECT_EQ(b.mode, Mode::kCheckConfig);
  EXPECT_EQ(b.config_file, "/etc/b.yaml");
}

TEST(OptionsTest, UsageErrorsExitTwoWithAMessage) {
  Options o = Parse({"--no-such-flag"});
  EXPECT_EQ(o.mode, Mode::kExit);
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.exit_message.find("--no-such-flag"), std::string::npos);

  Options bad_output = Parse({"check", "--output=xml"});
  EXPECT_EQ(bad_output.mode, Mode::kExit);
  EXPECT_EQ(bad_output.exit_code, 2);
}

TEST(OptionsTest, HelpAndVersionExitZero) {
  Options h = Parse({"--help"});
  EXPECT_EQ(h.mode, Mode::kExit);
  EXPECT_EQ(h.exit_code, 0);
  EXPECT_NE(h.exit_message.find("--web.listen-address"), std::string::npos);
  EXPECT_NE(h.exit_message.find("--no-collector.roce"), std::string::npos);
  Options v = Parse({"--version"});
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_NE(v.exit_message.find(RDMAHD_VERSION), std::string::npos);
}

TEST(OptionsTest, ProbeTakesAPeerAndPerftestLikeFlags) {
  Options o = Parse({"probe", "192.0.2.2"});
  EXPECT_EQ(o.mode, Mode::kProbe);
  EXPECT_EQ(o.probe_peer, "192.0.2.2");
  EXPECT_EQ(o.probe_port, 18600);
  EXPECT_FALSE(o.probe_size.has_value());  // the kind's default: 2 or 65536
  EXPECT_EQ(o.probe_iterations, 1000u);
  EXPECT_FALSE(o.probe_bandwidth);
  EXPECT_FALSE(o.probe_tos.has_value());

  o = Parse({"probe", "node-b", "--port=18700", "--size", "64", "--iterations=5000", "--bandwidth",
             "--source=192.0.2.1", "--tos=106", "--duration=2.5", "--queue-depth=16", "--timeout=0.5"});
  EXPECT_EQ(o.mode, Mode::kProbe);
  EXPECT_EQ(o.probe_port, 18700);
  EXPECT_EQ(o.probe_size, std::optional<std::uint32_t>(64));
  EXPECT_EQ(o.probe_iterations, 5000u);
  EXPECT_TRUE(o.probe_bandwidth);
  EXPECT_EQ(o.probe_source, "192.0.2.1");
  EXPECT_EQ(o.probe_tos, std::optional<std::uint8_t>(106));
  EXPECT_DOUBLE_EQ(o.probe_duration_s, 2.5);
  EXPECT_EQ(o.probe_queue_depth, 16u);
  EXPECT_DOUBLE_EQ(o.probe_timeout_s, 0.5);
  EXPECT_EQ(Parse({"probe", "x", "--tos=0"}).probe_tos, std::optional<std::uint8_t>(0));  // 0 is set, not unset
}

TEST(OptionsTest, ProbeUsageErrorsExitTwo) {
  for (std::vector<const char*> bad : {std::vector<const char*>{"probe"},
                                       {"probe", "x", "--tos=256"},
                                       {"probe", "x", "--iterations=4"},  // perftest's minimum is 5
                                       {"probe", "x", "--size=0"},
                                       {"probe", "x", "--port=70000"},
                                       {"probe", "x", "--queue-depth=0"}}) {
    Options o = Parse(bad);
    EXPECT_EQ(o.mode, Mode::kExit) << bad.back();
    EXPECT_EQ(o.exit_code, 2) << bad.back();
  }
}

// What comes before a flag of `subcommand` so that it parses (a subcommand and its positional).
std::vector<const char*> Prefix(const std::string& subcommand) {
  if (subcommand == "check") return {"check"};
  if (subcommand == "check-config") return {"check-config", "/etc/a.yaml"};
  if (subcommand == "probe") return {"probe", "192.0.2.2"};
  return {};
}

TEST(OptionsTest, ListFlagsCoversEverySubcommand) {
  std::map<std::string, int> per_subcommand;
  for (const FlagInfo& f : ListFlags({"devices", "roce"})) ++per_subcommand[f.subcommand];
  for (const char* sub : {"", "check", "check-config", "probe"}) EXPECT_GT(per_subcommand[sub], 0) << sub;
}

// `--name=` followed by another flag: the flag after it is never taken as the value. Either the
// empty value is refused naming the flag, or (were empty valid for it) the next flag still applies.
TEST(OptionsTest, AnEmptyValueNeverSwallowsTheNextFlag) {
  const std::vector<FlagInfo> flags = ListFlags({"devices", "roce"});
  ASSERT_GT(flags.size(), 20u);
  for (const FlagInfo& f : flags) {
    const std::string empty = f.name + "=";
    const bool follower_is_level = f.name != "--log.level";
    const char* follower = follower_is_level ? "--log.level=debug" : "--log.format=json";
    std::vector<const char*> args = Prefix(f.subcommand);
    args.push_back(empty.c_str());
    args.push_back(follower);
    Options o = Parse(args);
    SCOPED_TRACE(f.subcommand + " " + empty + " " + follower);
    if (o.mode == Mode::kExit) {
      EXPECT_EQ(o.exit_code, 2);
      EXPECT_NE(o.exit_message.find(empty + " is empty"), std::string::npos) << o.exit_message;
      EXPECT_EQ(o.exit_message.find(follower), std::string::npos) << o.exit_message;
    } else {
      EXPECT_EQ(follower_is_level ? o.log_level : o.log_format, follower_is_level ? "debug" : "json");
    }
  }
}

TEST(OptionsTest, TheIssueCasesAreRefusedNamingTheFlag) {
  Options dcb = Parse({"--path.dcb=", "--web.config.file=web.yml"});
  EXPECT_EQ(dcb.mode, Mode::kExit);
  EXPECT_EQ(dcb.exit_code, 2);
  EXPECT_NE(dcb.exit_message.find("--path.dcb= is empty: give a folder, or leave the flag out"), std::string::npos)
      << dcb.exit_message;

  Options procfs = Parse({"--path.procfs=", "--web.listen-address=127.0.0.1:9100"});
  EXPECT_EQ(procfs.exit_code, 2);
  EXPECT_NE(procfs.exit_message.find("--path.procfs= is empty"), std::string::npos) << procfs.exit_message;

  Options check = Parse({"check", "--path.sysfs=", "--output=json"});
  EXPECT_EQ(check.mode, Mode::kExit);
  EXPECT_NE(check.exit_message.find("--path.sysfs= is empty"), std::string::npos) << check.exit_message;

  Options web = Parse({"--web.config.file="});  // last on the line: empty all the same
  EXPECT_EQ(web.exit_code, 2);
  EXPECT_NE(web.exit_message.find("--web.config.file= is empty: give a YAML file"), std::string::npos);

  Options output = Parse({"check", "--output="});
  EXPECT_NE(output.exit_message.find("--output= is empty: give table, json or summary"), std::string::npos);

  Options sw = Parse({"check", "--fail-on-warning=", "--output=json"});
  EXPECT_EQ(sw.exit_code, 2);
  EXPECT_NE(sw.exit_message.find("--fail-on-warning= is empty: write --fail-on-warning alone"), std::string::npos);
}

// The spaced form takes the next argument, but never an empty one and never another flag.
TEST(OptionsTest, ASpacedValueIsNeitherEmptyNorAFlag) {
  Options empty = Parse({"--path.dcb", "", "--web.config.file=web.yml"});
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_NE(empty.exit_message.find("--path.dcb is given an empty value: give a folder"), std::string::npos)
      << empty.exit_message;

  Options flag = Parse({"--path.dcb", "--web.config.file=web.yml"});
  EXPECT_EQ(flag.exit_code, 2);
  EXPECT_NE(flag.exit_message.find("--path.dcb has no value (the argument after it is the flag "
                                   "--web.config.file)"),
            std::string::npos)
      << flag.exit_message;
  EXPECT_EQ(flag.exit_message.find("web.yml"), std::string::npos);  // names the flag, not its value

  Options subcommand_flag = Parse({"probe", "x", "--source", "--bandwidth"});
  EXPECT_EQ(subcommand_flag.exit_code, 2);
  EXPECT_NE(subcommand_flag.exit_message.find("--source has no value"), std::string::npos);

  // Values that merely look like flags, spaced values, and positionals after `--` still work.
  Options ok = Parse({"--path.sysfs", "/fx/sys", "--config.file", "--not-a-flag.yaml", "--log.level", "debug"});
  EXPECT_EQ(ok.mode, Mode::kDaemon) << ok.exit_message;
  EXPECT_EQ(ok.sysfs, "/fx/sys");
  EXPECT_EQ(ok.config_file, "--not-a-flag.yaml");
  EXPECT_EQ(ok.log_level, "debug");
  Options positional = Parse({"check-config", "--", "--path.dcb="});
  EXPECT_EQ(positional.mode, Mode::kCheckConfig) << positional.exit_message;
  EXPECT_EQ(positional.config_file, "--path.dcb=");
}

}  // namespace
}  // namespace rdmahd
