#include "config/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <future>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "common/excerpt.h"
#include "core/collection_engine.h"
#include "tests/support/test_paths.h"

namespace rdmahd {
namespace {

using ::testing::HasSubstr;
using ::testing::AllOf;
using ::testing::Not;
using ::testing::StartsWith;
using std::chrono::milliseconds;

const std::vector<std::string> kCollectors = {"devices", "ports", "roce_qos", "host"};

Result<Config> Parse(const std::string& yaml) { return ParseConfig(yaml, "t.yaml", kCollectors); }

// The error message of a parse that must fail ("" and a test failure when it succeeded).
std::string ErrorOf(const std::string& yaml) {
  Result<Config> r = Parse(yaml);
  EXPECT_FALSE(r.ok()) << "parsed, but should have failed:\n" << yaml;
  return r.ok() ? "" : r.error().message;
}

void ExpectDefaults(const Config& c) {
  const Config d;
  EXPECT_TRUE(c.collectors.empty());
  EXPECT_EQ(c.devices.include, d.devices.include);
  EXPECT_EQ(c.devices.exclude, d.devices.exclude);
  EXPECT_EQ(c.scrape_cache_window, milliseconds(200));
  EXPECT_EQ(c.Section<PortPolicy>().require_active, d.Section<PortPolicy>().require_active);
  EXPECT_EQ(c.Section<PortPolicy>().min_rate_gbps, d.Section<PortPolicy>().min_rate_gbps);
  EXPECT_EQ(c.Section<PortPolicy>().require_roce_v2_gid, d.Section<PortPolicy>().require_roce_v2_gid);
  EXPECT_EQ(c.Section<PortPolicy>().min_active_mtu, d.Section<PortPolicy>().min_active_mtu);
  EXPECT_FALSE(c.Section<DeviceLimitsPolicy>().any());
  EXPECT_TRUE(c.Section<FirmwarePolicy>().rules.empty());
  EXPECT_EQ(c.Section<RocePolicy>().priority, d.Section<RocePolicy>().priority);
  EXPECT_EQ(c.Section<RocePolicy>().dscp, d.Section<RocePolicy>().dscp);
  EXPECT_EQ(c.Section<RocePolicy>().trust, d.Section<RocePolicy>().trust);
  EXPECT_EQ(c.Section<RocePolicy>().require_ecn, d.Section<RocePolicy>().require_ecn);
  EXPECT_EQ(c.Section<RocePolicy>().min_mtu, d.Section<RocePolicy>().min_mtu);
  EXPECT_EQ(c.Section<RocePolicy>().extra_ethtool_stats, d.Section<RocePolicy>().extra_ethtool_stats);
  EXPECT_EQ(c.Section<HostDeviceAccessPolicy>().user, d.Section<HostDeviceAccessPolicy>().user);
  EXPECT_EQ(c.Section<HostDeviceAccessPolicy>().group, d.Section<HostDeviceAccessPolicy>().group);
  EXPECT_EQ(c.Section<CpuGovernorPolicy>().governor, d.Section<CpuGovernorPolicy>().governor);
  EXPECT_EQ(c.Section<HostLinkFlapPolicy>().drop_window, d.Section<HostLinkFlapPolicy>().drop_window);
  EXPECT_EQ(c.Section<HostLinkFlapPolicy>().window, d.Section<HostLinkFlapPolicy>().window);
  EXPECT_EQ(c.Section<HostLinkFlapPolicy>().threshold, d.Section<HostLinkFlapPolicy>().threshold);
  EXPECT_EQ(c.Section<HostLinkFlapPolicy>().recovery, d.Section<HostLinkFlapPolicy>().recovery);
  EXPECT_EQ(c.Section<PeersPolicy>().targets, d.Section<PeersPolicy>().targets);
  EXPECT_EQ(c.Section<PeersPolicy>().file, d.Section<PeersPolicy>().file);
  EXPECT_EQ(c.Section<PeersPolicy>().port, d.Section<PeersPolicy>().port);
  EXPECT_EQ(c.Section<PeersPolicy>().interval, d.Section<PeersPolicy>().interval);
  EXPECT_EQ(c.Section<PeersPolicy>().step_timeout, d.Section<PeersPolicy>().step_timeout);
  EXPECT_EQ(c.Section<PeersPolicy>().latency_message_size, d.Section<PeersPolicy>().latency_message_size);
  EXPECT_EQ(c.Section<PeersPolicy>().latency_iterations, d.Section<PeersPolicy>().latency_iterations);
  EXPECT_EQ(c.Section<PeersPolicy>().bandwidth, d.Section<PeersPolicy>().bandwidth);
  EXPECT_EQ(c.Section<PeersPolicy>().bandwidth_interval, d.Section<PeersPolicy>().bandwidth_interval);
  EXPECT_EQ(c.Section<PeersPolicy>().bandwidth_duration, d.Section<PeersPolicy>().bandwidth_duration);
  EXPECT_EQ(c.Section<PeersPolicy>().bandwidth_message_size, d.Section<PeersPolicy>().bandwidth_message_size);
  EXPECT_EQ(c.Section<PeersPolicy>().bandwidth_queue_depth, d.Section<PeersPolicy>().bandwidth_queue_depth);
  EXPECT_EQ(c.Section<PeersPolicy>().responder.enabled, d.Section<PeersPolicy>().responder.enabled);
  EXPECT_EQ(c.Section<PeersPolicy>().responder.port, d.Section<PeersPolicy>().responder.port);
  EXPECT_EQ(c.Section<PeersPolicy>().responder.max_sessions, d.Section<PeersPolicy>().responder.max_sessions);
  EXPECT_EQ(c.Section<PeersPolicy>().responder.max_message_size, d.Section<PeersPolicy>().responder.max_message_size);
  EXPECT_EQ(c.Section<PeersPolicy>().responder.max_registered_bytes, d.Section<PeersPolicy>().responder.max_registered_bytes);
}

TEST(ConfigParseTest, EmptyTextAndCommentsOnlyGiveDefaults) {
  for (const char* text : {"", "\n\n", "# nothing configured yet\n  # indented comment\n", "---\n",
                           "roce:\nports:\n  # require_active: false\nscrape: {}\n", "roce:\nports: ~\n"}) {
    Result<Config> r = Parse(text);
    ASSERT_TRUE(r.ok()) << r.error().message;
    ExpectDefaults(*r);
    EXPECT_EQ(r->source, "t.yaml");
  }
}

TEST(ConfigParseTest, NullValueKeepsTheDefault) {
  Result<Config> r = Parse("ports:\n  require_active:\nroce:\n  priority: ~\n  require_ecn: null\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ExpectDefaults(*r);
}

// A file cut mid-write ends right after a key (or a list's "-"): refused, naming the file, line and
// key, so a reload keeps the running config instead of silently dropping the policy. The same
// key with no value before the end of the file is what someone wrote (everything below it
// commented out) and keeps the default, as does an explicit "~" at the end.
TEST(ConfigCutFileTest, ASectionWithNoValueAtTheEndOfTheFileIsRefused) {
  const std::string roce_cut =
      "t.yaml:3:1: roce: has no value, and nothing follows it in the file (a file cut mid-write?); "
      "write \"roce: ~\" to keep the built-in default on purpose";
  EXPECT_EQ(ErrorOf("ports:\n  require_active: true\nroce:"), roce_cut);
  EXPECT_EQ(ErrorOf("ports:\n  require_active: true\nroce:\n"), roce_cut);
  EXPECT_EQ(ErrorOf("ports:\n  require_active: true\nroce:   \n\n  # priority: 3\n# end\n"), roce_cut);
  EXPECT_EQ(ErrorOf("roce:"),
            "t.yaml:1:1: roce: has no value, and nothing follows it in the file (a file cut mid-write?); "
            "write \"roce: ~\" to keep the built-in default on purpose");
  EXPECT_EQ(ErrorOf("roce:\r\n"),
            "t.yaml:1:1: roce: has no value, and nothing follows it in the file (a file cut mid-write?); "
            "write \"roce: ~\" to keep the built-in default on purpose");
  EXPECT_EQ(ErrorOf("\xEF\xBB\xBFroce:"),  // a UTF-8 byte order mark does not hide it
            "t.yaml:1:1: roce: has no value, and nothing follows it in the file (a file cut mid-write?); "
            "write \"roce: ~\" to keep the built-in default on purpose");
  EXPECT_THAT(ErrorOf("collectors:\n  devices:"), StartsWith("t.yaml:2:3: collectors.devices: has no value"));
  EXPECT_THAT(ErrorOf("host:\n  hugepages:\n"), StartsWith("t.yaml:2:3: host.hugepages: has no value"));
}

TEST(ConfigCutFileTest, APolicyKeyWithNoValueAtTheEndOfTheFileIsRefused) {
  EXPECT_EQ(ErrorOf("roce:\n  priority:"),
            "t.yaml:2:3: roce.priority: has no value, and nothing follows it in the file (a file cut "
            "mid-write?); write \"priority: ~\" to keep the built-in default on purpose");
  EXPECT_EQ(ErrorOf("roce:\n  priority:\n"),
            "t.yaml:2:3: roce.priority: has no value, and nothing follows it in the file (a file cut "
            "mid-write?); write \"priority: ~\" to keep the built-in default on purpose");
  EXPECT_THAT(ErrorOf("roce:\n  priority: 3\n  dscp:"), StartsWith("t.yaml:3:3: roce.dscp: has no value"));
  EXPECT_THAT(ErrorOf("ports:\n  min_rate_gbps: 100\nroce:\n  priority: 3\n  trust:\n"),
              StartsWith("t.yaml:5:3: roce.trust: has no value"));
  EXPECT_EQ(ErrorOf("firmware:\n  - {hca_type: MT4119, min_version: 16.35.2000}\n  -"),
            "t.yaml:2:3: firmware[1]: is an empty item, and nothing follows it in the file (a file cut "
            "mid-write?); complete the item or remove its \"-\"");
}

TEST(ConfigCutFileTest, ANullBeforeTheEndOrWrittenOutKeepsTheDefault) {
  for (const char* text : {"roce: ~\n", "roce: null\n", "roce: ~", "roce:\n  priority: ~\n", "roce: {}\n",
                           "roce: {priority: }\n", "roce:\n  priority: NULL # unset\n",
                           "roce:\n  # priority: 3\nports:\n  require_active: true\n",
                           "roce:\n  priority:\nports: {}\n", "firmware: []\n"}) {
    Result<Config> r = Parse(text);
    ASSERT_TRUE(r.ok()) << text << ": " << r.error().message;
    EXPECT_FALSE(r->Section<RocePolicy>().priority.has_value()) << text;
  }
}

TEST(ConfigParseTest, FullConfigParsesIntoExactValues) {
  Result<Config> r = Parse(R"(
collectors:
  devices: true
  roce_qos: false
devices:
  include: ["mlx5_.*", "bnxt_re[0-9]+"]
  exclude: [mlx5_bond_0]
scrape:
  cache_window: 150ms
ports:
  require_active: false
  min_rate_gbps: 200
  require_roce_v2_gid: false
firmware:
  - hca_type: MT4119
    min_version: 16.35.2000
  - board_id: MT_0000000008
    hca_type: MT4125
    min_version: 22.39.1002
  - board_id: BCM957508
    min_version: 216.0.220.0
roce:
  priority: 3
  dscp: 26
  trust: dscp
  require_ecn: false
  min_mtu: 4200
  extra_ethtool_stats: ["rx_vport_rdma_.*", "rx_prio3_.*"]
)");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Config& c = *r;
  EXPECT_EQ(c.collectors, (std::map<std::string, bool>{{"devices", true}, {"roce_qos", false}}));
  EXPECT_FALSE(c.CollectorEnabled("roce_qos"));
  EXPECT_TRUE(c.CollectorEnabled("host"));
  EXPECT_EQ(c.devices.include, (std::vector<std::string>{"mlx5_.*", "bnxt_re[0-9]+"}));
  EXPECT_EQ(c.devices.exclude, (std::vector<std::string>{"mlx5_bond_0"}));
  EXPECT_TRUE(c.devices.Matches("mlx5_3"));
  EXPECT_FALSE(c.devices.Matches("mlx5_bond_0"));
  EXPECT_EQ(c.scrape_cache_window, milliseconds(150));
  EXPECT_FALSE(c.Section<PortPolicy>().require_active);
  EXPECT_EQ(c.Section<PortPolicy>().min_rate_gbps, 200.0);
  EXPECT_FALSE(c.Section<PortPolicy>().require_roce_v2_gid);
  ASSERT_EQ(c.Section<FirmwarePolicy>().rules.size(), 3u);
  EXPECT_EQ(c.Section<FirmwarePolicy>().rules[0].hca_type, "MT4119");
  EXPECT_EQ(c.Section<FirmwarePolicy>().rules[0].board_id, "");
  EXPECT_EQ(c.Section<FirmwarePolicy>().rules[0].min_version, "16.35.2000");
  EXPECT_EQ(c.Section<FirmwarePolicy>().rules[1].hca_type, "MT4125");
  EXPECT_EQ(c.Section<FirmwarePolicy>().rules[1].board_id, "MT_0000000008");
  EXPECT_EQ(c.Section<FirmwarePolicy>().rules[1].min_version, "22.39.1002");
  EXPECT_EQ(c.Section<FirmwarePolicy>().rules[2].hca_type, "");
  EXPECT_EQ(c.Section<FirmwarePolicy>().rules[2].board_id, "BCM957508");
  EXPECT_EQ(c.Section<FirmwarePolicy>().rules[2].min_version, "216.0.220.0");
  EXPECT_EQ(c.Section<RocePolicy>().priority, 3);
  EXPECT_EQ(c.Section<RocePolicy>().dscp, 26);
  EXPECT_EQ(c.Section<RocePolicy>().trust, TrustMode::kDscp);
  EXPECT_FALSE(c.Section<RocePolicy>().require_ecn);
  EXPECT_EQ(c.Section<RocePolicy>().min_mtu, 4200);
  EXPECT_EQ(c.Section<RocePolicy>().extra_ethtool_stats, (std::vector<std::string>{"rx_vport_rdma_.*", "rx_prio3_.*"}));
}

// The loader compiles the device patterns once; the compiled forms must answer exactly as the
// patterns do, also after a reload copies the config, and never go stale when a pattern changes.
TEST(DeviceFilterTest, CompiledAndHandBuiltFiltersAgree) {
  auto c = Parse("devices:\n  include: [\"mlx5_.*\", \"rxe0\"]\n  exclude: [\"mlx5_bond_.*\"]\n");
  ASSERT_TRUE(c.ok()) << c.error().message;
  DeviceFilter hand;
  hand.include = {"mlx5_.*", "rxe0"};
  hand.exclude = {"mlx5_bond_.*"};
  Config copy = *c;
  for (const std::string name : {"mlx5_0", "mlx5_12", "mlx5_bond_0", "rxe0", "rxe1", "bnxt_re0", "xmlx5_0"}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(c->devices.Matches(name), hand.Matches(name));
    EXPECT_EQ(copy.devices.Matches(name), hand.Matches(name));
  }
  EXPECT_TRUE(c->devices.Matches("mlx5_0"));
  EXPECT_FALSE(c->devices.Matches("mlx5_bond_0"));
  EXPECT_FALSE(c->devices.Matches("xmlx5_0"));  // whole-name match

  copy.devices.exclude = {"mlx5_0"};  // changed after Compile(): the new pattern applies
  EXPECT_FALSE(copy.devices.Matches("mlx5_0"));
  EXPECT_TRUE(copy.devices.Matches("mlx5_bond_0"));
  EXPECT_TRUE(DeviceFilter{}.Matches("anything"));
}

TEST(ConfigParseTest, VerbsPolicyKeysParse) {
  Result<Config> r = Parse(R"(
ports:
  min_active_mtu: 4096
limits:
  min_max_qp: 65536
  min_max_cqe: 4194303
  min_max_mr_size: 18446744073709551615
)");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->Section<PortPolicy>().min_active_mtu, 4096);
  EXPECT_EQ(r->Section<DeviceLimitsPolicy>().min_max_qp, 65536u);
  EXPECT_EQ(r->Section<DeviceLimitsPolicy>().min_max_cqe, 4194303u);
  EXPECT_EQ(r->Section<DeviceLimitsPolicy>().min_max_mr_size, 18446744073709551615u);
  Result<Config> partial = Parse("limits:\n  min_max_cqe: 1024\n");
  ASSERT_TRUE(partial.ok()) << partial.error().message;
  EXPECT_FALSE(partial->Section<DeviceLimitsPolicy>().min_max_qp);
  EXPECT_TRUE(partial->Section<DeviceLimitsPolicy>().any());
}

TEST(ConfigParseTest, VerbsPolicyValuesAreValidated) {
  EXPECT_EQ(ErrorOf("ports:\n  min_active_mtu: 4200\n"),
            "t.yaml:2:19: ports.min_active_mtu: must be an RDMA MTU: 256, 512, 1024, 2048 or 4096, got "
            "\"4200\" (that looks like a netdev MTU; it belongs in roce.min_mtu)");
  EXPECT_THAT(ErrorOf("ports:\n  min_active_mtu: 3000\n"), StartsWith("t.yaml:2:19: ports.min_active_mtu: must be"));
  EXPECT_EQ(ErrorOf("limits:\n  min_max_qp: -1\n"), "t.yaml:2:15: limits.min_max_qp: must be a positive integer, got \"-1\"");
  EXPECT_THAT(ErrorOf("limits:\n  min_max_qp: 0\n"), HasSubstr("must be a positive integer"));
  EXPECT_THAT(ErrorOf("limits:\n  min_max_mr_size: 4GiB\n"), StartsWith("t.yaml:2:20: limits.min_max_mr_size:"));
  EXPECT_EQ(ErrorOf("limits:\n  min_max_cqes: 10\n"),
            "t.yaml:2:3: unknown key \"min_max_cqes\" in limits (did you mean \"min_max_cqe\"?)");
}

TEST(ConfigParseTest, BoolsAcceptTrueAndFalseInAnyCase) {
  Result<Config> r = Parse("ports:\n  require_active: False\n  require_roce_v2_gid: TRUE\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->Section<PortPolicy>().require_active);
  EXPECT_TRUE(r->Section<PortPolicy>().require_roce_v2_gid);
  Result<Config> pcp = Parse("roce:\n  trust: pcp\n");
  ASSERT_TRUE(pcp.ok()) << pcp.error().message;
  EXPECT_EQ(pcp->Section<RocePolicy>().trust, TrustMode::kPcp);
}

TEST(ConfigParseTest, TopLevelMustBeAMap) {
  EXPECT_THAT(ErrorOf("- roce\n- ports\n"),
              StartsWith("t.yaml:1:1: the top level must be a map of sections"));
  EXPECT_EQ(ErrorOf("just some words\n"),
            "t.yaml:1:1: not a YAML mapping: the file is one scalar of 15 bytes (not shown); the top level "
            "must be a map of sections (collectors, checks, probes, devices, scrape, ports, limits, firmware, "
            "roce, host, peers, kernel_log, inventory, history)");
}

// A file that is not a config (a private key, /etc/passwd, /etc/shadow) must not
// come back in the message, which `sudo check-config` would print to someone who cannot read it.
const char kPemSecret[] = "MIIEowIBAAKCAQEAu7Qz9sEcReTpAyLoAd";
const char kShadowSalt[] = "j9T$Qx7Sa1tPepper";
const char kShadowHash[] = "Hq2v8ZgMmS3cr3tH4shV4lue";

std::string PemLikeText() {
  return std::string("-----BEGIN RSA PRIVATE KEY-----\n") + kPemSecret + "\nK1mN0pQrStUvWxYz0123456789abcdefgh\n"
         "-----END RSA PRIVATE KEY-----\n";
}

std::string ShadowLikeText() {
  return std::string("root:$y$") + kShadowSalt + "$" + kShadowHash + ":19000:0:99999:7:::\n"
         "daemon:*:19000:0:99999:7:::\n";
}

TEST(ConfigSecretsTest, WholeFileScalarIsNotAMappingAndNotShown) {
  for (const std::string& text : {PemLikeText(), std::string("root:x:0:0:root:/root:/bin/bash\n"
                                                              "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n")}) {
    const std::string message = ErrorOf(text);
    EXPECT_THAT(message, StartsWith("t.yaml:1:1: not a YAML mapping: the file is one scalar of ")) << message;
    for (const char* secret : {kPemSecret, "BEGIN RSA", "PRIVATE", "root:x", "/bin/bash", "nologin"}) {
      EXPECT_THAT(message, Not(HasSubstr(secret)));
    }
  }
}

TEST(ConfigSecretsTest, ShadowLineKeyIsDescribedNotQuoted) {
  const std::string message = ErrorOf(ShadowLikeText());
  const std::size_t key_bytes = ShadowLikeText().find(":::") + 2;  // the key ends before the last ':'
  EXPECT_THAT(message, ::testing::StartsWith("t.yaml:1:1: unknown key (a key of " + std::to_string(key_bytes) +
                                             " bytes, not shown: it is not a name) at the top level (expected one "
                                             "of: collectors, checks, "));
  for (const char* secret : {kShadowSalt, kShadowHash, "root", "$y$", "19000"}) {
    EXPECT_THAT(message, Not(HasSubstr(secret)));
  }
  // Deeper in the schema too, and for a name-like key longer than any real one.
  EXPECT_THAT(ErrorOf("roce:\n  " + std::string("pw:$6$") + kShadowHash + ": 1\n"),
              AllOf(StartsWith("t.yaml:2:3: unknown key (a key of "), Not(HasSubstr(kShadowHash))));
  EXPECT_EQ(ErrorOf("roce:\n  " + std::string(kShadowHash) + ": 1\n"),
            "t.yaml:2:3: unknown key (a key of 24 bytes, not shown: it is not a name) in roce (expected one "
            "of: priority, dscp, trust, require_ecn, min_mtu, extra_ethtool_stats)");
}

TEST(ConfigSecretsTest, ValuesAreShortEscapedExcerpts) {
  const std::string value(100000, 'v');
  const std::string message = ErrorOf("roce:\n  priority: " + value + "\n");
  EXPECT_EQ(message, "t.yaml:2:13: roce.priority: must be an integer from 0 to 7, got \"" + std::string(40, 'v') +
                         "...\" (100000 bytes)");
  // Control characters in a value are escaped, never printed raw (a terminal would obey them).
  EXPECT_EQ(ErrorOf("roce:\n  priority: \"\\e[2J\\u0007x\"\n"),
            "t.yaml:2:13: roce.priority: must be an integer from 0 to 7, got \"\\x1b[2J\\x07x\"");
}

// A 1 MB key must not give a 1 MB message.
TEST(ConfigSecretsTest, HugeKeyGivesAShortMessage) {
  const std::string key(1'000'000, 'k');
  const std::string message = ErrorOf("? " + key + "\n: 1\n");  // an explicit key: no 1024-byte bound
  // The list of valid keys grows with each registered section; the key itself is never printed.
  EXPECT_THAT(message, ::testing::StartsWith("t.yaml:1:3: unknown key (a key of 1000000 bytes, not shown: it is not "
                                             "a name) at the top level (expected one of: collectors, checks, "));
  EXPECT_LE(message.size(), kMaxMessageBytes);
  // Every message is capped, whatever its parts (here a long regex error).
  const std::string pattern = std::string(1, '(').append(3000, 'p');
  const std::string regex_message = ErrorOf("devices:\n  include: ['" + pattern + "']\n");
  EXPECT_THAT(regex_message, StartsWith("t.yaml:2:13: devices.include[0]: invalid regular expression \"(ppp"));
  EXPECT_LE(regex_message.size(), kMaxMessageBytes);
}

// Odd bytes get a message saying what is wrong where, not a misleading one.
TEST(ConfigTextTest, CrOnlyLineEndsAreNamed) {
  EXPECT_EQ(ErrorOf("roce:\r  priority: 3\r"),
            "t.yaml:1:6: a carriage return (CR) not followed by a line feed: end lines with LF or CRLF, not CR "
            "alone");
  EXPECT_EQ(ErrorOf("roce:\n  priority: 3\r"), "t.yaml:2:14: a carriage return (CR) not followed by a line feed: "
                                              "end lines with LF or CRLF, not CR alone");
  Result<Config> crlf = Parse("roce:\r\n  priority: 3\r\n");
  ASSERT_TRUE(crlf.ok()) << crlf.error().message;
  EXPECT_EQ(crlf->Section<RocePolicy>().priority, 3);
}

TEST(ConfigTextTest, NulByteIsNamed) {
  EXPECT_EQ(ErrorOf(std::string("roce:\n  prio\0rity: 3\n", 20)),
            "t.yaml:2:7: a NUL byte: a config file is UTF-8 text (is this a binary or UTF-16 file?)");
  // A UTF-16 file: its first NUL.
  EXPECT_THAT(ErrorOf(std::string("\xff\xfer\0o\0", 6)), StartsWith("t.yaml:1:"));
  EXPECT_THAT(ErrorOf(std::string("r\0o\0", 4)), StartsWith("t.yaml:1:2: a NUL byte"));
}

TEST(ConfigTextTest, TabIndentationIsNamed) {
  EXPECT_EQ(ErrorOf("roce:\n\tpriority: 3\n"), "t.yaml:2:1: a tab in the indentation: YAML indents with spaces only");
  EXPECT_EQ(ErrorOf("roce:\n  \tpriority: 3\n"), "t.yaml:2:3: a tab in the indentation: YAML indents with spaces only");
  // Tabs elsewhere are fine: separating a value, on a blank or comment-only line.
  Result<Config> ok = Parse("roce:\t{priority:\t3}\n\t# a comment\n\t\nports:\n  min_rate_gbps:\t100\n");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->Section<RocePolicy>().priority, 3);
}

TEST(ConfigTextTest, InvalidUtf8IsNamed) {
  EXPECT_EQ(ErrorOf("roce:\n  priority: \"\xff\"\n"), "t.yaml:2:14: invalid UTF-8 (byte 0xFF): YAML text must be UTF-8");
  EXPECT_EQ(ErrorOf("# caf\xe9\nroce: {}\n"), "t.yaml:1:6: invalid UTF-8 (byte 0xE9): YAML text must be UTF-8");
  Result<Config> ok = Parse("# caf\xc3\xa9\nroce: {priority: 3}\n");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
}

// A file with no settings is marked, so that a reload can refuse it.
TEST(ConfigParseTest, FileWithNoSettingsIsMarked) {
  for (const char* text : {"", "\n\n", "# all commented out\n# roce:\n#   priority: 3\n", "---\n", "~\n"}) {
    Result<Config> r = Parse(text);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_TRUE(r->no_settings) << text;
  }
  for (const char* text : {"{}\n", "roce: ~\n", "roce: {}\n", "roce: {priority: 3}\n"}) {
    Result<Config> r = Parse(text);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_FALSE(r->no_settings) << text;
  }
  EXPECT_FALSE(Config{}.no_settings);
}

TEST(ConfigParseTest, OutOfRangeValueNamesFileLineColumnAndKeyPath) {
  EXPECT_EQ(ErrorOf("scrape:\n  cache_window: 100ms\nroce:\n  trust: dscp\n  priority: 9\n"),
            "t.yaml:5:13: roce.priority: must be an integer from 0 to 7, got \"9\"");
  EXPECT_EQ(ErrorOf("roce: {min_mtu: 42000}\n"),
            "t.yaml:1:17: roce.min_mtu: must be an integer from 1280 to 9978, got \"42000\"");
  EXPECT_EQ(ErrorOf("roce:\n  priority: 3.5\n"),
            "t.yaml:2:13: roce.priority: must be an integer from 0 to 7, got \"3.5\"");
  EXPECT_EQ(ErrorOf("ports:\n  min_rate_gbps: 0\n"),
            "t.yaml:2:18: ports.min_rate_gbps: must be a rate in Gb/s, greater than 0 and at most "
            "1600, got \"0\"");
  EXPECT_THAT(ErrorOf("ports:\n  min_rate_gbps: 100000\n"), StartsWith("t.yaml:2:18: ports.min_rate_gbps:"));
  EXPECT_THAT(ErrorOf("ports:\n  min_rate_gbps: .nan\n"), StartsWith("t.yaml:2:18: ports.min_rate_gbps:"));
}

TEST(ConfigParseTest, DscpWrittenAsTosByteGetsAHint) {
  EXPECT_EQ(ErrorOf("roce:\n  dscp: 104\n"),
            "t.yaml:2:9: roce.dscp: must be an integer from 0 to 63, got \"104\" (that looks like a "
            "TOS byte; the DSCP is TOS / 4 = 26)");
  EXPECT_EQ(ErrorOf("roce:\n  dscp: 65\n"),
            "t.yaml:2:9: roce.dscp: must be an integer from 0 to 63, got \"65\"");
}

TEST(ConfigParseTest, UnknownKeySuggestsTheClosestValidKey) {
  EXPECT_EQ(ErrorOf("roce:\n  dscp: 26\n  prioirty: 3\n"),
            "t.yaml:3:3: unknown key \"prioirty\" in roce (did you mean \"priority\"?)");
  EXPECT_EQ(ErrorOf("rcoe:\n  priority: 3\n"),
            "t.yaml:1:1: unknown key \"rcoe\" at the top level (did you mean \"roce\"?)");
  EXPECT_EQ(ErrorOf("scrape:\n  cache_windw: 100ms\n"),
            "t.yaml:2:3: unknown key \"cache_windw\" in scrape (did you mean \"cache_window\"?)");
  EXPECT_EQ(ErrorOf("ports:\n  Require_Active: true\n"),
            "t.yaml:2:3: unknown key \"Require_Active\" in ports (did you mean \"require_active\"?)");
  EXPECT_EQ(ErrorOf("firmware:\n  - hca_type: MT4119\n    min_verison: 16.35.2000\n"),
            "t.yaml:3:5: unknown key \"min_verison\" in firmware[0] (did you mean \"min_version\"?)");
}

TEST(ConfigParseTest, UnknownKeyFarFromAnyValidKeyListsTheValidOnes) {
  EXPECT_EQ(ErrorOf("roce:\n  pfc: [3]\n"),
            "t.yaml:2:3: unknown key \"pfc\" in roce (expected one of: priority, dscp, trust, "
            "require_ecn, min_mtu, extra_ethtool_stats)");
}

TEST(ConfigParseTest, CollectorNamesMustBeKnown) {
  EXPECT_EQ(ErrorOf("collectors:\n  devices: true\n  roce_qso: false\n"),
            "t.yaml:3:3: unknown collector \"roce_qso\" in collectors (did you mean \"roce_qos\"?)");
  Result<Config> none = ParseConfig("collectors:\n  devices: true\n", "t.yaml", {});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().message, "t.yaml:2:3: unknown collector \"devices\" in collectors (none are known)");
}

TEST(ConfigParseTest, WrongNodeTypesAreClearErrors) {
  EXPECT_EQ(ErrorOf("ports:\n  require_active: yes please\n"),
            "t.yaml:2:19: ports.require_active: must be true or false, got \"yes please\"");
  EXPECT_EQ(ErrorOf("ports:\n  require_active: yes\n"),
            "t.yaml:2:19: ports.require_active: must be true or false, got \"yes\"");
  EXPECT_EQ(ErrorOf("devices:\n  include: {mlx5: true}\n"),
            "t.yaml:2:12: devices.include: must be a list of regular expressions, got a map");
  EXPECT_EQ(ErrorOf("devices:\n  include: mlx5_.*\n"),
            "t.yaml:2:12: devices.include: must be a list of regular expressions, got \"mlx5_.*\" "
            "(write [\"mlx5_.*\"] for a list of one)");
  EXPECT_EQ(ErrorOf("roce:\n  - priority: 3\n"), "t.yaml:2:3: roce: must be a map of keys, got a list");
  EXPECT_EQ(ErrorOf("roce:\n  priority: [3]\n"),
            "t.yaml:2:13: roce.priority: must be an integer from 0 to 7, got a list");
  EXPECT_EQ(ErrorOf("firmware:\n  hca_type: MT4119\n"),
            "t.yaml:2:3: firmware: must be a list of rules (- hca_type: ..., min_version: ...), got a map");
  EXPECT_EQ(ErrorOf("collectors:\n  host: off\n"),
            "t.yaml:2:9: collectors.host: must be true or false, got \"off\"");
  EXPECT_EQ(ErrorOf("roce:\n  trust: dcsp\n"),
            "t.yaml:2:10: roce.trust: must be \"dscp\" or \"pcp\", got \"dcsp\" (did you mean \"dscp\"?)");
  EXPECT_EQ(ErrorOf("devices:\n  include: [\"mlx5_.*\", [x]]\n"),
            "t.yaml:2:24: devices.include[1]: must be a non-empty regular expression, got a list");
  EXPECT_EQ(ErrorOf("? [a, b]\n: 1\n"), "t.yaml:1:3: keys must be plain names, got a list at the top level");
}

TEST(ConfigParseTest, MalformedYamlIsReportedWithPosition) {
  EXPECT_EQ(ErrorOf("devices:\n  include: [\"mlx5_.*\"\nroce:\n  priority: 3\n"),
            "t.yaml:2:12: invalid YAML: this flow sequence '[' is never closed (the file ends first)");
  EXPECT_EQ(ErrorOf("roce: priority: 3\n"), "t.yaml:1:15: invalid YAML: illegal map value");
  EXPECT_EQ(ErrorOf("roce:\n  priority: 3\n dscp: 26\n"), "t.yaml:3:2: invalid YAML: end of map not found");
}

TEST(ConfigParseTest, DuplicateKeysNameBothLines) {
  EXPECT_EQ(ErrorOf("roce:\n  priority: 3\n  dscp: 26\n  priority: 4\n"),
            "t.yaml:4:3: duplicate key \"priority\" in roce (first set at line 2)");
  EXPECT_EQ(ErrorOf("roce:\n  priority: 3\nports: {}\nroce:\n  dscp: 26\n"),
            "t.yaml:4:1: duplicate key \"roce\" at the top level (first set at line 1)");
}

TEST(ConfigParseTest, MoreThanOneDocumentIsAnError) {
  EXPECT_EQ(ErrorOf("roce:\n  priority: 3\n---\nroce:\n  priority: 4\n"),
            "t.yaml:4:1: a second YAML document; a config file holds exactly one");
}

TEST(ConfigParseTest, RegularExpressionsAreValidatedAtLoad) {
  EXPECT_THAT(ErrorOf("devices:\n  include: [\"mlx5_.*\", \"(mlx5\"]\n"),
              StartsWith("t.yaml:2:24: devices.include[1]: invalid regular expression \"(mlx5\": "));
  EXPECT_THAT(ErrorOf("devices:\n  exclude:\n    - \"mlx5_[0-\"\n"),
              StartsWith("t.yaml:3:7: devices.exclude[0]: invalid regular expression \"mlx5_[0-\": "));
  // RE2 syntax: lookaround and backreferences (ECMAScript) are refused, not silently different.
  EXPECT_EQ(ErrorOf("roce:\n  extra_ethtool_stats: [\"rx_prio(?=3)\"]\n"),
            "t.yaml:2:25: roce.extra_ethtool_stats[0]: invalid regular expression \"rx_prio(?=3)\": "
            "invalid perl operator: (?=");
  EXPECT_THAT(ErrorOf("devices:\n  include: ['(mlx5)_\\1']\n"),
              StartsWith("t.yaml:2:13: devices.include[0]: invalid regular expression \"(mlx5)_\\\\1\": "));
  EXPECT_EQ(ErrorOf("devices:\n  include: [\"\"]\n"),
            "t.yaml:2:13: devices.include[0]: must be a non-empty regular expression, got \"\"");
  // Backslashes survive YAML single quotes and reach the regex engine as written.
  Result<Config> r = Parse("roce:\n  extra_ethtool_stats: ['rx_prio\\d_pause']\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->Section<RocePolicy>().extra_ethtool_stats, (std::vector<std::string>{"rx_prio\\d_pause"}));
}

TEST(ConfigParseTest, DurationForms) {
  const std::vector<std::pair<std::string, int>> accepted = {
      {"250ms", 250}, {"0ms", 0}, {"0.2s", 200}, {"0.25s", 250}, {"0s", 0},
      {"150", 150},   {"0", 0},   {"\"120ms\"", 120}, {".1s", 100},
  };
  for (const auto& [text, ms] : accepted) {
    Result<Config> r = Parse("scrape:\n  cache_window: " + text + "\n");
    ASSERT_TRUE(r.ok()) << text << ": " << r.error().message;
    EXPECT_EQ(r->scrape_cache_window, milliseconds(ms)) << text;
  }
}

TEST(ConfigParseTest, CacheWindowAbove250msOrMalformedIsRejected) {
  const std::string bounds =
      "must be a duration from 0ms to 250ms (\"200ms\", \"0.2s\" or an integer number of milliseconds)";
  EXPECT_EQ(ErrorOf("scrape:\n  cache_window: 251ms\n"),
            "t.yaml:2:17: scrape.cache_window: " + bounds + ", got \"251ms\"");
  for (const char* text : {"300ms", "0.3s", "1s", "251", "-1ms", "-5", "200us", "0.2", "fast", "ms", "s",
                           "inf s", "[200]"}) {
    EXPECT_THAT(ErrorOf(std::string("scrape:\n  cache_window: ") + text + "\n"),
                StartsWith("t.yaml:2:17: scrape.cache_window: " + bounds))
        << text;
  }
  EXPECT_EQ(ErrorOf("scrape:\n  cache_window: 1.5ms\n"),
            "t.yaml:2:17: scrape.cache_window: must be a whole number of milliseconds, got \"1.5ms\"");
}

TEST(ConfigParseTest, CollectionTimeoutDefaultsTo5sAndIsBounded) {
  Result<Config> d = Parse("");
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->collection_timeout, milliseconds(5000));
  for (const auto& [text, ms] : std::vector<std::pair<std::string, int>>{
           {"100ms", 100}, {"2s", 2000}, {"1500", 1500}, {"60s", 60000}}) {
    Result<Config> r = Parse("scrape:\n  collection_timeout: " + text + "\n");
    ASSERT_TRUE(r.ok()) << text << ": " << r.error().message;
    EXPECT_EQ(r->collection_timeout, milliseconds(ms)) << text;
  }
  const std::string bounds =
      "must be a duration from 100ms to 60s (\"200ms\", \"0.2s\" or an integer number of milliseconds)";
  EXPECT_EQ(ErrorOf("scrape:\n  collection_timeout: 99ms\n"),
            "t.yaml:2:23: scrape.collection_timeout: " + bounds + ", got \"99ms\"");
  for (const char* text : {"0", "61s", "60001", "-1s", "forever"}) {
    EXPECT_THAT(ErrorOf(std::string("scrape:\n  collection_timeout: ") + text + "\n"),
                StartsWith("t.yaml:2:23: scrape.collection_timeout: " + bounds))
        << text;
  }
}

TEST(ConfigParseTest, FirmwareRulesAreValidated) {
  EXPECT_EQ(ErrorOf("firmware:\n  - min_version: 16.35.2000\n"),
            "t.yaml:2:5: firmware[0]: a rule needs hca_type, board_id or both (a rule matching every "
            "device is almost always a mistake)");
  EXPECT_EQ(ErrorOf("firmware:\n  - hca_type: MT4119\n"),
            "t.yaml:2:5: firmware[0]: a rule needs min_version");
  EXPECT_EQ(ErrorOf("firmware:\n  - hca_type: MT4119\n    min_version: 16.35.x\n"),
            "t.yaml:3:18: firmware[0].min_version: must be a dotted numeric version such as 16.35.2000, "
            "got \"16.35.x\"");
  EXPECT_THAT(ErrorOf("firmware:\n  - {hca_type: MT4119, min_version: 16..35}\n"),
              StartsWith("t.yaml:2:37: firmware[0].min_version: must be a dotted numeric version"));
  EXPECT_EQ(ErrorOf("firmware:\n  - hca_type: MT4119\n    min_version: 16.35.2000\n"
                    "  - hca_type: MT4119\n    min_version: 16.40.1000\n"),
            "t.yaml:4:5: firmware[1]: can never apply: firmware[0] (line 2) matches every device it "
            "matches and the first matching rule wins (put the more specific rule first)");
  // A model-wide rule before a board-specific one shadows it; the other order is fine.
  EXPECT_THAT(ErrorOf("firmware:\n  - {hca_type: MT4129, min_version: 28.39.1002}\n"
                      "  - {hca_type: MT4129, board_id: MT_1, min_version: 28.40.1000}\n"),
              StartsWith("t.yaml:3:5: firmware[1]: can never apply: firmware[0] (line 2)"));
  Result<Config> ordered = Parse(
      "firmware:\n  - {hca_type: MT4129, board_id: MT_1, min_version: 28.40.1000}\n"
      "  - {hca_type: MT4129, min_version: 28.39.1002}\n"
      "  - {board_id: MT_2, min_version: 1.2}\n");
  ASSERT_TRUE(ordered.ok()) << ordered.error().message;
  EXPECT_EQ(ordered->Section<FirmwarePolicy>().rules.size(), 3u);
  EXPECT_EQ(ErrorOf("firmware:\n  - MT4119\n"),
            "t.yaml:2:5: firmware[0]: must be a rule (hca_type, board_id, min_version), got \"MT4119\"");
}

TEST(ConfigParseTest, NoExceptionEscapesOnHostileInput) {
  const std::string deep_nesting(5000, '[');
  for (const std::string& text :
       {deep_nesting, std::string("roce: *undefined_alias\n"), std::string("\t- tab indent\n"),
        std::string("roce:\n  priority: !!binary 3\n"), std::string("\xff\xfe\x00garbage", 10),
        std::string("a: &x [*x]\n"), std::string("{{{{{{{{}}}}}}}}: 1\n")}) {
    Result<Config> r = Parse(text);
    if (!r.ok()) {
      EXPECT_THAT(r.error().message, StartsWith("t.yaml")) << text.substr(0, 40);
    }
  }
}

// Every position an error prints is 1-based and inside the text: its line exists and its column is
// at most one past that line's end.
void ExpectPositionInside(const std::string& yaml, const std::string& message) {
  std::smatch m;
  ASSERT_TRUE(std::regex_search(message, m, std::regex(R"(^t\.yaml:(\d+):(\d+): )"))) << message;
  const int line = std::stoi(m[1]), column = std::stoi(m[2]);
  std::vector<std::string> lines;
  std::size_t start = 0;
  for (std::size_t nl; (nl = yaml.find('\n', start)) != std::string::npos; start = nl + 1) {
    lines.push_back(yaml.substr(start, nl - start));
  }
  if (start < yaml.size() || lines.empty()) lines.push_back(yaml.substr(start));
  ASSERT_GE(line, 1) << message;
  ASSERT_LE(line, static_cast<int>(lines.size())) << message << "\n" << yaml;
  EXPECT_GE(column, 1) << message;
  EXPECT_LE(column, static_cast<int>(lines[static_cast<std::size_t>(line - 1)].size()) + 1) << message;
}

// yaml-cpp notices an unclosed flow only at the end of the input and reports the line after the
// last; the error points at the bracket that opened it instead (as PyYAML does).
TEST(ConfigParseTest, UnclosedFlowIsReportedWhereItOpens) {
  const std::string never = " is never closed (the file ends first)";
  // The issue's case: a 4-line file, reported at line 5 before.
  EXPECT_EQ(ErrorOf("devices:\n  include: [\"mlx5_0\",\n    \"mlx5_1\"\nroce: {priority: 3}\n"),
            "t.yaml:2:12: invalid YAML: this flow sequence '['" + never);
  EXPECT_EQ(ErrorOf("roce: {priority: 3\n"), "t.yaml:1:7: invalid YAML: this flow map '{'" + never);
  EXPECT_EQ(ErrorOf("roce:\n  priority: 3\nports: {require_active: true,\n  min_rate_gbps: 100\n"),
            "t.yaml:3:8: invalid YAML: this flow map '{'" + never);
  // yaml-cpp stops mid-file here (an implicit key on a later line), still about the same '['.
  EXPECT_EQ(ErrorOf("scrape: {}\nroce:\n  extra_ethtool_stats: [rx_prio3_pause, tx_prio3_pause\n"
                    "  priority: 3\n"),
            "t.yaml:3:24: invalid YAML: this flow sequence '['" + never);
  // Nested: the innermost still-open flow, after closed ones.
  EXPECT_EQ(ErrorOf("firmware: [{hca_type: MT4119, min_version: 1.2}, {hca_type: MT4125,\n"
                    "  min_version: [3\n"),
            "t.yaml:2:16: invalid YAML: this flow sequence '['" + never);
  EXPECT_EQ(ErrorOf("firmware: [{hca_type: MT4119, min_version: 1.2}, {hca_type: MT4125\n"),
            "t.yaml:1:50: invalid YAML: this flow map '{'" + never);
  // Brackets inside quoted scalars, comments and block scalars are not flow indicators.
  EXPECT_EQ(ErrorOf("devices:  # ] [ } {\n  include: ['mlx5_[0-9]]', \"x]}\\\"]\", 'it''s ]'\n"),
            "t.yaml:2:12: invalid YAML: this flow sequence '['" + never);
  EXPECT_EQ(ErrorOf("devices:\n  include: [mlx5_0,  # ] closes nothing: a comment\n    mlx5_1\n"),
            "t.yaml:2:12: invalid YAML: this flow sequence '['" + never);
  EXPECT_EQ(ErrorOf("a: |\n  ] [ text, not a flow\nb: >-\n  {\ndevices: {include: [x]\n"),
            "t.yaml:5:10: invalid YAML: this flow map '{'" + never);
  EXPECT_EQ(ErrorOf("--- {devices: {include: [a]}\n"), "t.yaml:1:5: invalid YAML: this flow map '{'" + never);
  EXPECT_EQ(ErrorOf("devices:\n  include: [a#b, c]  # [\n  exclude: [d\n"),
            "t.yaml:3:12: invalid YAML: this flow sequence '['" + never);
}

TEST(ConfigParseTest, OtherYamlErrorsKeepTheirPositionInsideTheFile) {
  // A closed flow followed by an unrelated error: yaml-cpp's own message and position.
  EXPECT_EQ(ErrorOf("devices: {include: [\"a]\"]}  # [\nroce: priority: 3\n"),
            "t.yaml:2:15: invalid YAML: illegal map value");
  EXPECT_EQ(ErrorOf("devices:\n  include: [a, b]]\n"), "t.yaml:2:18: invalid YAML: illegal flow end");
  for (const std::string& yaml :
       {std::string("roce: [\n"), std::string("["), std::string("{"), std::string("a: {\n\n\n"),
        std::string("roce:\n  priority: 3\n dscp: 26\n"), std::string("- - [ \"x\n"),
        std::string("a: b: c"), std::string("? [\n"), std::string("]\n"), std::string("a: *nope\n"),
        std::string("a: !<x [\n"), std::string("a: [\r\n\r\n"), std::string("\n\n\n{a: 1\n\n")}) {
    Result<Config> r = Parse(yaml);
    ASSERT_FALSE(r.ok()) << yaml;
    ExpectPositionInside(yaml, r.error().message);
  }
}

// yaml-cpp 0.7's LoadAll loops forever (allocating) on a ',' where a document would start: found
// by fuzz/config_fuzz.cc. Each parse runs in a child process with an alarm, so a regression fails
// (killed by SIGALRM) instead of hanging the suite.
TEST(ConfigParseTest, StrayCommaAtDocumentLevelIsAnErrorNotAHang) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {",", "t.yaml:1:1: invalid YAML: unexpected ',' outside a flow collection ('[...]' or '{...}')"},
      {"roce: {priority: 3}, x\n", "t.yaml:1:20: invalid YAML: end of map not found"},  // in a map: no hang
      {"[1] , b\n", "t.yaml:1:5: invalid YAML: unexpected ','"},
      {"\"a\", b\n", "t.yaml:1:4: invalid YAML: unexpected ','"},
      {"--- !t\n  ,\n", "t.yaml:2:3: invalid YAML: unexpected ','"},
  };
  for (const auto& [yaml, expected] : cases) {
    EXPECT_EXIT(
        {
          ::alarm(5);
          Result<Config> r = Parse(yaml);
          std::_Exit(!r.ok() && r.error().message.rfind(expected, 0) == 0 ? 0 : 1);
        },
        ::testing::ExitedWithCode(0), "")
        << yaml;
  }
}

TEST(ConfigParseTest, DeepNestingIsRefusedBeforeTheRecursiveParser) {
  EXPECT_EQ(ErrorOf(std::string(100000, '[')),
            "t.yaml:1:65: invalid YAML: flow collections ('[', '{') nested more than 64 deep");
  std::string maps = "roce:\n  x: ";
  for (int i = 0; i < 50000; ++i) maps += "{a: ";
  EXPECT_EQ(ErrorOf(maps), "t.yaml:2:262: invalid YAML: flow collections ('[', '{') nested more than 64 deep");
  std::string real = "devices: {include: [[[[[[[[[[x]]]]]]]]]]}\n";  // deep but within the bound: yaml-cpp decides
  EXPECT_THAT(ErrorOf(real), StartsWith("t.yaml:1:21: devices.include[0]: must be a non-empty regular expression"));
  // Block nesting ("- - - ..."): yaml-cpp's own depth guard, reported with a position in the file.
  std::string dashes;
  for (int i = 0; i < 100000; ++i) dashes += "- ";
  std::string message = ErrorOf(dashes + "x\n");
  EXPECT_THAT(message, ::testing::MatchesRegex(R"(t\.yaml:1:[0-9]+: invalid YAML: nested more than [0-9]+ levels deep)"));
  ExpectPositionInside(dashes + "x\n", message);
}

TEST(ConfigParseTest, TextOverTheSizeCapIsRefused) {
  std::string big = "# " + std::string(kMaxConfigBytes, 'x') + "\n";
  EXPECT_EQ(ErrorOf(big), "t.yaml: " + std::to_string(big.size()) +
                              " bytes, more than the 1 MiB a config file may hold");
  std::string fits = "# " + std::string(kMaxConfigBytes - 4, 'x') + "\n";
  EXPECT_TRUE(Parse(fits).ok());
}

// std::regex compiled a group per recursion and crashed (stack overflow) on 20,000 nested groups.
TEST(ConfigParseTest, PatternsThatWouldExhaustARegexEngineAreRefusedWithTheirKey) {
  const std::string nested = std::string(20000, '(') + "a" + std::string(20000, ')');
  EXPECT_EQ(ErrorOf("devices:\n  include: ['" + nested + "']\n"),
            "t.yaml:2:13: devices.include[0]: invalid regular expression \"" + std::string(40, '(') +
                "...\" (40001 bytes): longer than 4096 characters (40001)");
  EXPECT_THAT(ErrorOf("roce:\n  extra_ethtool_stats:\n    - '" + nested + "'\n"),
              StartsWith("t.yaml:3:7: roce.extra_ethtool_stats[0]: invalid regular expression"));
  std::string big;
  for (int i = 0; i < 40; ++i) big += "\\w{1000}";
  EXPECT_THAT(ErrorOf("devices:\n  exclude: ['" + big + "']\n"),
              ::testing::AllOf(StartsWith("t.yaml:2:13: devices.exclude[0]: invalid regular expression"),
                               HasSubstr("too complex")));
}

TEST(DeviceFilterTest, MatchesWholeNamesWithRe2) {
  Result<Config> r = Parse("devices:\n  include: ['mlx5_\\d+', 'rxe.*']\n  exclude: ['mlx5_1\\d']\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const DeviceFilter& f = r->devices;
  EXPECT_TRUE(f.Matches("mlx5_0"));
  EXPECT_TRUE(f.Matches("mlx5_1"));
  EXPECT_FALSE(f.Matches("mlx5_10"));  // excluded
  EXPECT_TRUE(f.Matches("rxe0"));
  EXPECT_FALSE(f.Matches("mlx5_bond_0"));
  EXPECT_FALSE(f.Matches("xmlx5_0"));  // whole name, not a search
  // A hand-built filter (never compiled) behaves the same; a bad pattern in it matches nothing.
  DeviceFilter hand;
  hand.include = {"mlx5_.*", "(bad"};
  EXPECT_TRUE(hand.Matches("mlx5_3"));
  EXPECT_FALSE(hand.Matches("(bad"));
}

// Runs LoadConfigFile on another thread and fails (instead of hanging the suite) when it does not
// return within a few seconds; `unblock` then makes the stuck read return so the thread can end.
Result<Config> LoadWithin(const std::string& path, const std::function<void()>& unblock) {
  std::packaged_task<Result<Config>()> task([&] { return LoadConfigFile(path, kCollectors); });
  std::future<Result<Config>> done = task.get_future();
  std::thread worker(std::move(task));
  if (done.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    ADD_FAILURE() << "LoadConfigFile(" << path << ") blocked for 5 s";
    unblock();
  }
  worker.join();
  return done.get();
}

TEST(ConfigLoadFileTest, FifoWithNoWriterIsRefusedAtOnce) {
  testing::TempDir dir;
  const std::string fifo = dir.path() + "/config.yaml";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Result<Config> r = LoadWithin(fifo, [&] {
    int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) ::close(fd);
  });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "config file " + fifo + ": is a FIFO, not a regular file");
}

TEST(ConfigLoadFileTest, AnEmptyNameSaysSoInsteadOfAnOpenError) {
  Result<Config> r = LoadConfigFile("", kCollectors);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "config file name is empty: give the path of a YAML file");
}

TEST(ConfigLoadFileTest, DevicesAndDirectoriesAreRefused) {
  Result<Config> zero = LoadWithin("/dev/zero", [] {});
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.error().message, "config file /dev/zero: is a character device, not a regular file");
  testing::TempDir dir;
  Result<Config> directory = LoadConfigFile(dir.path(), kCollectors);
  ASSERT_FALSE(directory.ok());
  EXPECT_EQ(directory.error().message, "config file " + dir.path() + ": is a directory, not a regular file");
  EXPECT_EQ(directory.error().errno_value, EISDIR);
  // Through a symlink, the target is what counts.
  dir.Symlink("/dev/zero", "link.yaml");
  Result<Config> link = LoadConfigFile(dir.path() + "/link.yaml", kCollectors);
  ASSERT_FALSE(link.ok());
  EXPECT_THAT(link.error().message, HasSubstr("is a character device"));
}

TEST(ConfigLoadFileTest, FileOverTheCapIsRefusedWithoutReadingIt) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/huge.yaml";
  dir.Write("huge.yaml", "roce:\n  priority: 3\n");
  ASSERT_EQ(::truncate(path.c_str(), 50 << 20), 0);  // sparse: 50 MiB without writing them
  const auto start = std::chrono::steady_clock::now();
  Result<Config> r = LoadConfigFile(path, kCollectors);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "config file " + path + ": is 52428800 bytes; a config file may hold "
                               "at most 1 MiB (1048576 bytes)");
  EXPECT_EQ(r.error().errno_value, EFBIG);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  // Exactly at the cap is fine.
  ASSERT_EQ(::truncate(path.c_str(), 0), 0);
  dir.Write("huge.yaml", "# " + std::string(kMaxConfigBytes - 3, 'x') + "\n");
  Result<Config> at_cap = LoadConfigFile(path, kCollectors);
  EXPECT_TRUE(at_cap.ok()) << at_cap.error().message;
}

TEST(ConfigLoadFileTest, MissingFileNamesPathAndErrno) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/nope.yaml";
  Result<Config> r = LoadConfigFile(path, kCollectors);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr(path));
  EXPECT_THAT(r.error().message, HasSubstr("No such file or directory"));
  EXPECT_EQ(r.error().errno_value, ENOENT);

  Result<Config> directory = LoadConfigFile(dir.path(), kCollectors);
  ASSERT_FALSE(directory.ok());
  EXPECT_THAT(directory.error().message, HasSubstr(dir.path()));
  EXPECT_EQ(directory.error().errno_value, EISDIR);
}

TEST(ConfigLoadFileTest, SourceIsThePathAndErrorsStartWithIt) {
  testing::TempDir dir;
  dir.Write("good.yaml", "roce:\n  priority: 3\n");
  dir.Write("bad.yaml", "roce:\n  priority: 9\n");
  Result<Config> good = LoadConfigFile(dir.path() + "/good.yaml", kCollectors);
  ASSERT_TRUE(good.ok()) << good.error().message;
  EXPECT_EQ(good->source, dir.path() + "/good.yaml");
  EXPECT_EQ(good->Section<RocePolicy>().priority, 3);
  Result<Config> bad = LoadConfigFile(dir.path() + "/bad.yaml", kCollectors);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message,
            dir.path() + "/bad.yaml:2:13: roce.priority: must be an integer from 0 to 7, got \"9\"");
}

// ---- peers ----------------------------------------------------------------------------------

TEST(ConfigPeersTest, FullPeersSectionParsesIntoExactValues) {
  Result<Config> r = Parse(R"(
peers:
  targets: [10.0.0.2, "fd00::3", node-b.fabric.example]
  file: /etc/rdma-healthd/peers.yaml
  port: 18700
  source_address: 10.0.0.1
  tos: 104
  interval: 250ms
  step_timeout: 2s
  latency_message_size: 64
  latency_iterations: 5000
  bandwidth: true
  bandwidth_interval: 10m
  bandwidth_duration: 2s
  bandwidth_message_size: 1048576
  bandwidth_queue_depth: 16
  max_latency_p99_us: 12.5
  min_bandwidth_gbps: 90
  cpus: 2-3,6
  responder:
    enabled: true
    listen_address: "fd00::1"
    port: 18701
    allow: [10.0.0.0/24, "fd00::/64", 192.0.2.9]
    max_sessions: 4
    max_message_size: 65536
    max_registered_bytes: 1048576
    cpus: 5
)");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const PeersPolicy& p = r->Section<PeersPolicy>();
  EXPECT_EQ(p.targets, (std::vector<std::string>{"10.0.0.2", "fd00::3", "node-b.fabric.example"}));
  EXPECT_EQ(p.file, "/etc/rdma-healthd/peers.yaml");
  EXPECT_EQ(p.port, 18700);
  EXPECT_EQ(p.source_address, "10.0.0.1");
  EXPECT_EQ(p.tos, std::optional<std::uint8_t>(104));
  EXPECT_EQ(p.interval, milliseconds(250));
  EXPECT_EQ(p.step_timeout, milliseconds(2000));
  EXPECT_EQ(p.latency_message_size, 64u);
  EXPECT_EQ(p.latency_iterations, 5000u);
  EXPECT_TRUE(p.bandwidth);
  EXPECT_EQ(p.bandwidth_interval, milliseconds(600000));
  EXPECT_EQ(p.bandwidth_duration, milliseconds(2000));
  EXPECT_EQ(p.bandwidth_message_size, 1048576u);
  EXPECT_EQ(p.bandwidth_queue_depth, 16u);
  EXPECT_EQ(p.max_latency_p99_us, 12.5);
  EXPECT_EQ(p.min_bandwidth_gbps, 90.0);
  EXPECT_TRUE(p.responder.enabled);
  EXPECT_EQ(p.responder.listen_address, "fd00::1");
  EXPECT_EQ(p.responder.port, 18701);
  EXPECT_EQ(p.responder.allow, (std::vector<std::string>{"10.0.0.0/24", "fd00::/64", "192.0.2.9"}));
  EXPECT_EQ(p.responder.max_sessions, 4u);
  EXPECT_EQ(p.responder.max_message_size, 65536u);
  EXPECT_EQ(p.responder.max_registered_bytes, 1048576u);
  EXPECT_EQ(p.cpus.ToString(), "2-3,6");
  EXPECT_EQ(p.responder.cpus.ToString(), "5");
}

TEST(ConfigPeersTest, DefaultsAreThePolicyDefaults) {
  Result<Config> r = Parse("peers:\n  targets: [10.0.0.2]\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const PeersPolicy d;
  EXPECT_EQ(r->Section<PeersPolicy>().port, d.port);
  EXPECT_EQ(r->Section<PeersPolicy>().interval, d.interval);
  EXPECT_FALSE(r->Section<PeersPolicy>().bandwidth);
  EXPECT_FALSE(r->Section<PeersPolicy>().tos);
  EXPECT_FALSE(r->Section<PeersPolicy>().responder.enabled);
  EXPECT_TRUE(r->Section<PeersPolicy>().cpus.empty());  // any CPU
  EXPECT_TRUE(r->Section<PeersPolicy>().responder.cpus.empty());
}

TEST(ConfigPeersTest, BadTargetsNameFileLineColumnAndWhy) {
  EXPECT_EQ(ErrorOf("peers:\n  targets: [10.0.0.2, \"node_b:18600\"]\n"),
            "t.yaml:2:23: peers.targets[1]: \"node_b:18600\" is not an IP address or host name (the port is "
            "peers.port, not part of the target)");
  EXPECT_THAT(ErrorOf("peers:\n  targets:\n    - 10.0.0.2\n    - 10.0.0.2\n"),
              AllOf(StartsWith("t.yaml:4:7: peers.targets[1]:"), HasSubstr("listed twice (first at line 3)")));
  EXPECT_THAT(ErrorOf("peers:\n  targets: [\"rdma://x\"]\n"), HasSubstr("a URL"));
  EXPECT_THAT(ErrorOf("peers:\n  targets: [\"-bad.example\"]\n"), HasSubstr("starts or ends with '-'"));
  EXPECT_THAT(ErrorOf("peers:\n  targets: 10.0.0.2\n"), HasSubstr("write [\"10.0.0.2\"] for a list of one"));
}

TEST(ConfigPeersTest, ValuesAreValidatedWithTheirKey) {
  EXPECT_THAT(ErrorOf("peers:\n  tos: 106\n"), AllOf(StartsWith("t.yaml:2:8: peers.tos:"), HasSubstr("multiple of 4")));
  EXPECT_THAT(ErrorOf("peers:\n  tos: 256\n"), HasSubstr("from 0 to 255"));
  EXPECT_THAT(ErrorOf("peers:\n  port: 0\n"), HasSubstr("peers.port: must be an integer from 1 to 65535"));
  EXPECT_THAT(ErrorOf("peers:\n  source_address: rdma0\n"), HasSubstr("peers.source_address: must be an IP address"));
  EXPECT_THAT(ErrorOf("peers:\n  interval: 10ms\n"), HasSubstr("peers.interval: must be a duration from 100ms"));
  EXPECT_THAT(ErrorOf("peers:\n  latency_iterations: 4\n"), HasSubstr("from 5 to 1000000"));
  EXPECT_THAT(ErrorOf("peers:\n  max_latency_p99_us: 0\n"), HasSubstr("greater than 0"));
  EXPECT_THAT(ErrorOf("peers:\n  min_bandwidth_gbps: 100000\n"), HasSubstr("peers.min_bandwidth_gbps"));
  EXPECT_THAT(ErrorOf("peers:\n  bandwidth_interval: 10s\n  bandwidth_duration: 6s\n"),
              AllOf(StartsWith("t.yaml:2:3: peers:"), HasSubstr("at most half of bandwidth_interval")));
  EXPECT_THAT(ErrorOf("peers:\n  intervall: 1s\n"), HasSubstr("(did you mean \"interval\"?)"));
  EXPECT_THAT(ErrorOf("peers:\n  cpus: 3-1\n"),
              AllOf(StartsWith("t.yaml:2:9: peers.cpus:"), HasSubstr("list of CPUs in the kernel's format")));
  EXPECT_THAT(ErrorOf("peers:\n  cpus: 70000\n"), HasSubstr("numbers up to 65535"));
  EXPECT_THAT(ErrorOf("peers:\n  cpus: [1, 2]\n"), HasSubstr("peers.cpus: must be a non-empty string"));
  EXPECT_THAT(ErrorOf("peers:\n  responder:\n    cpus: \"0-3:2/4\"\n"), HasSubstr("peers.responder.cpus:"));
}

TEST(ConfigPeersTest, ResponderNeedsAnAllowListAndRoomForOneMessage) {
  EXPECT_THAT(ErrorOf("peers:\n  responder:\n    enabled: true\n"),
              AllOf(StartsWith("t.yaml:3:5: peers.responder:"), HasSubstr("allow is empty")));
  EXPECT_THAT(ErrorOf("peers:\n  responder:\n    allow: [10.0.0.0/33]\n"),
              HasSubstr("peers.responder.allow[0]: \"10.0.0.0/33\": prefix length must be 0 to 32"));
  EXPECT_THAT(ErrorOf("peers:\n  responder:\n    max_message_size: 4096\n    max_registered_bytes: 1024\n"),
              HasSubstr("below max_message_size"));
}

TEST(ConfigPeersTest, RelativeTargetsFileIsRelativeToTheConfigFilesFolder) {
  Result<Config> r = ParseConfig("peers:\n  file: peers.yaml\n", "/etc/rdma-healthd/config.yaml", kCollectors);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->Section<PeersPolicy>().file, "/etc/rdma-healthd/peers.yaml");
}

TEST(ConfigPeersTest, MinutesAndHoursAreDurations) {
  Result<Config> r = Parse("peers:\n  interval: 1m\n  bandwidth_interval: 1h\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->Section<PeersPolicy>().interval, milliseconds(60000));
  EXPECT_EQ(r->Section<PeersPolicy>().bandwidth_interval, milliseconds(3600000));
}

TEST(ConfigPeersTest, DiscoveryAndSelection) {
  Result<Config> r = Parse(
      "peers:\n  discovery:\n    dns: [rdma-healthd.monitoring.svc]\n    dns_server: \"127.0.0.1:5353\"\n"
      "    dns_interval: 30s\n  selection:\n    max_peers: 16\n    same_tor_cap: 4\n    tor_label: rack\n"
      "    rotation: 2h\n    self: 10.0.0.1\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->Section<PeersPolicy>().discovery.dns, std::vector<std::string>{"rdma-healthd.monitoring.svc"});
  EXPECT_EQ(r->Section<PeersPolicy>().discovery.dns_server, "127.0.0.1:5353");
  EXPECT_EQ(r->Section<PeersPolicy>().discovery.dns_interval, milliseconds(30000));
  EXPECT_EQ(r->Section<PeersPolicy>().selection.max_peers, 16u);
  EXPECT_EQ(r->Section<PeersPolicy>().selection.same_tor_cap, 4u);
  EXPECT_EQ(r->Section<PeersPolicy>().selection.tor_label, "rack");
  EXPECT_EQ(r->Section<PeersPolicy>().selection.rotation, milliseconds(7200000));
  EXPECT_EQ(r->Section<PeersPolicy>().selection.self, "10.0.0.1");
  Result<Config> zero = Parse("peers:\n  selection:\n    max_peers: 0\n");
  ASSERT_FALSE(zero.ok());
  EXPECT_THAT(zero.error().message, HasSubstr("t.yaml:3:16"));
  EXPECT_FALSE(Parse("peers:\n  discovery:\n    dns_interval: 10ms\n").ok());
}

// Every shipped example parses against the collectors actually linked in, so a broken example (or a
// collector rename that leaves one behind) fails the suite.
TEST(ConfigExamplesTest, EveryShippedExampleParses) {
  namespace fs = std::filesystem;
  std::vector<std::string> files = {testing::SourceDir() + "/config/example.yaml"};
  for (const auto& entry : fs::directory_iterator(testing::SourceDir() + "/config/examples")) {
    if (entry.path().extension() == ".yaml") files.push_back(entry.path().string());
  }
  EXPECT_GE(files.size(), 4u);
  for (const auto& file : files) {
    Result<Config> r = LoadConfigFile(file, RegisteredPluginNames());
    EXPECT_TRUE(r.ok()) << r.error().message;
  }
}

// ---- a bundle's config: data about the captured node (issue 41 item 1) -------------------------

constexpr const char* kBundle = "/tmp/rdmahd-bundle-Xy12";

Result<Config> ParseCaptured(const std::string& yaml, const std::string& root = kBundle,
                             const std::string& source = std::string(kBundle) + "/config/config.yaml") {
  return ParseConfig(yaml, source, kCollectors, ConfigReadOptions{root});
}

// `check --capture` applies the bundle's own config: none of its paths may name a file of the
// analyst's machine (a pid_file of /etc/shadow printed its first bytes into a verdict).
TEST(ConfigCapturedNodeTest, PathsAreReRootedUnderTheExtraction) {
  Result<Config> r = ParseCaptured(R"(
host:
  workloads:
    - {name: shadow, pid_file: /etc/shadow}
    - {name: environ, pid_file: /proc/self/environ}
    - {name: climb, pid_file: /../../root/.ssh/id_ed25519}
    - {name: through, pid_file: /tmp/rdmahd-bundle-Xy12/../../etc/passwd}
    - {name: dots, pid_file: //run/./spdk/../spdk.pid}
    - {name: trainer, process: python3}
peers:
  file: /etc/passwd
)");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& w = r->Section<WorkloadsPolicy>().workloads;
  ASSERT_EQ(w.size(), 6u);
  EXPECT_EQ(w[0].pid_file, "/tmp/rdmahd-bundle-Xy12/etc/shadow");
  EXPECT_EQ(w[1].pid_file, "/tmp/rdmahd-bundle-Xy12/proc/self/environ");
  EXPECT_EQ(w[2].pid_file, "/tmp/rdmahd-bundle-Xy12/root/.ssh/id_ed25519");
  EXPECT_EQ(w[3].pid_file, "/tmp/rdmahd-bundle-Xy12/etc/passwd");
  EXPECT_EQ(w[4].pid_file, "/tmp/rdmahd-bundle-Xy12/run/spdk.pid");
  EXPECT_EQ(w[5].pid_file, "");
  EXPECT_EQ(w[5].process, "python3");
  EXPECT_EQ(r->Section<PeersPolicy>().file, "/tmp/rdmahd-bundle-Xy12/etc/passwd");
  EXPECT_EQ(r->captured_root, kBundle);
}

// A relative peers.file is relative to the config file's folder in the bundle; climbing out of
// the bundle is stopped at its root.
TEST(ConfigCapturedNodeTest, RelativePathsStayInTheBundle) {
  Result<Config> r = ParseCaptured("peers:\n  file: peers.yaml\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->Section<PeersPolicy>().file, "/tmp/rdmahd-bundle-Xy12/config/peers.yaml");
  r = ParseCaptured("peers:\n  file: ../../../../etc/passwd\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->Section<PeersPolicy>().file, "/tmp/rdmahd-bundle-Xy12/etc/passwd");
  // A trailing '/' on the root changes nothing.
  r = ParseCaptured("peers:\n  file: /etc/passwd\n", std::string(kBundle) + "//");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->Section<PeersPolicy>().file, "/tmp/rdmahd-bundle-Xy12/etc/passwd");
}

TEST(ConfigCapturedNodeTest, EveryReRootedPathIsBeneathTheRoot) {
  const std::string root = kBundle;
  for (const char* path : {"/", "/..", "/../..", "/.", "//", "/a/../..", "/etc/shadow/..", "/etc/../../../x",
                           "/tmp/rdmahd-bundle-Xy12", "/tmp/rdmahd-bundle-Xy12/..", "/tmp/rdmahd-bundle-Xy12/../x",
                           "/tmp/rdmahd-bundle-Xy12x/y", "/a/./b/.../c", "/..a/b..", "/a//b///c/"}) {
    for (const std::string& yaml : {"host:\n  workloads:\n    - {name: w, pid_file: '" + std::string(path) + "'}\n",
                                   "peers:\n  file: '" + std::string(path) + "'\n"}) {
      Result<Config> r = ParseCaptured(yaml);
      if (!r.ok()) {
        // Only a path that names the bundle's folder itself is refused, with the key.
        EXPECT_THAT(r.error().message, HasSubstr("names no file (this config is data about a captured node")) << path;
        continue;
      }
      const std::string got = r->Section<WorkloadsPolicy>().workloads.empty()
                                  ? r->Section<PeersPolicy>().file
                                  : r->Section<WorkloadsPolicy>().workloads[0].pid_file;
      EXPECT_THAT(got, StartsWith(root + "/")) << path;
      EXPECT_GT(got.size(), root.size() + 1) << path;
      for (const char* bad : {"/../", "/./", "//"}) EXPECT_THAT(got, Not(HasSubstr(bad))) << path << " -> " << got;
      EXPECT_FALSE(got.ends_with("/..") || got.ends_with("/.") || got.ends_with("/")) << path << " -> " << got;
    }
  }
  EXPECT_EQ(ParseCaptured("host:\n  workloads:\n    - {name: w, pid_file: /..}\n").error().message,
            "/tmp/rdmahd-bundle-Xy12/config/config.yaml: host.workloads[0].pid_file: \"/..\" names no file (this "
            "config is data about a captured node: its paths are read under the bundle's folder)");
  EXPECT_EQ(ParseCaptured("peers:\n  file: /\n").error().message,
            "/tmp/rdmahd-bundle-Xy12/config/config.yaml: peers.file: \"/\" names no file (this config is data "
            "about a captured node: its paths are read under the bundle's folder)");
}

// This node's own config keeps its paths; the captured-node mode is asked for, never assumed.
TEST(ConfigCapturedNodeTest, ThisNodesOwnConfigKeepsItsPaths) {
  Result<Config> r = Parse("host:\n  workloads:\n    - {name: w, pid_file: /run/spdk.pid}\npeers:\n  file: /etc/rdma-healthd/peers.yaml\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->Section<WorkloadsPolicy>().workloads[0].pid_file, "/run/spdk.pid");
  EXPECT_EQ(r->Section<PeersPolicy>().file, "/etc/rdma-healthd/peers.yaml");
  EXPECT_EQ(r->captured_root, "");
}

TEST(ConfigCapturedNodeTest, TheRootMustBeAnAbsoluteFolder) {
  for (const char* root : {"bundle", "./x", "/", "//"}) {
    Result<Config> r = ParseCaptured("roce: {priority: 3}\n", root);
    ASSERT_FALSE(r.ok()) << root;
    EXPECT_THAT(r.error().message, HasSubstr("must be an absolute path other than /")) << root;
  }
}

// Through LoadConfigFile, as `check --capture` reads the extracted config/config.yaml; a config
// with no settings is still marked (and still captured).
TEST(ConfigCapturedNodeTest, LoadConfigFileReadsABundlesConfigAsCaptured) {
  testing::TempDir dir;
  dir.Write("config/config.yaml", "host:\n  workloads:\n    - {name: w, pid_file: /etc/shadow}\n");
  Result<Config> r = LoadConfigFile(dir.path() + "/config/config.yaml", kCollectors, ConfigReadOptions{dir.path()});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->Section<WorkloadsPolicy>().workloads[0].pid_file, dir.path() + "/etc/shadow");
  dir.Write("config/config.yaml", "# nothing\n");
  r = LoadConfigFile(dir.path() + "/config/config.yaml", kCollectors, ConfigReadOptions{dir.path()});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->no_settings);
  EXPECT_EQ(r->captured_root, dir.path());
}

// The configs the tests and goldens run with (tests/fixtures/**/config.yaml) load too.
TEST(ConfigExamplesTest, EveryFixtureConfigParses) {
  namespace fs = std::filesystem;
  std::size_t loaded = 0;
  for (const auto& entry : fs::recursive_directory_iterator(testing::SourceDir() + "/tests/fixtures")) {
    if (entry.path().filename() != "config.yaml") continue;
    Result<Config> r = LoadConfigFile(entry.path().string(), RegisteredPluginNames());
    EXPECT_TRUE(r.ok()) << r.error().message;
    ++loaded;
  }
  EXPECT_GE(loaded, 3u);
}

// example.yaml writes out every key that has a default, with that default: it must not drift from
// config.h.
TEST(ConfigExamplesTest, ExampleYamlStatesTheBuiltInDefaults) {
  Result<Config> r =
      LoadConfigFile(testing::SourceDir() + "/config/example.yaml", RegisteredPluginNames());
  ASSERT_TRUE(r.ok()) << r.error().message;
  ExpectDefaults(*r);
}

TEST(ConfigExamplesTest, RoceExampleIsTheTypicalLosslessSetup) {
  Result<Config> r = LoadConfigFile(testing::SourceDir() + "/config/examples/roce-dscp-prio3.yaml",
                                    RegisteredPluginNames());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->Section<RocePolicy>().priority, 3);
  EXPECT_EQ(r->Section<RocePolicy>().dscp, 26);
  EXPECT_EQ(r->Section<RocePolicy>().trust, TrustMode::kDscp);
  EXPECT_EQ(r->Section<RocePolicy>().min_mtu, 4200);
  EXPECT_TRUE(r->Section<RocePolicy>().require_ecn);
}

TEST(ConfigParseTest, HostDeviceKeys) {
  Result<Config> r = Parse(
      "host:\n"
      "  device_access: {user: trainer, group: rdma}\n"
      "  cpu_governor: performance\n"
      "  link_flaps: {drop_window: 10s, window: 3600s, threshold: 3, recovery: 0}\n"
      "limits: {min_max_cq: 16384, min_max_mr: 1048576}\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->Section<HostDeviceAccessPolicy>().user, "trainer");
  EXPECT_EQ(r->Section<HostDeviceAccessPolicy>().group, "rdma");
  EXPECT_EQ(r->Section<CpuGovernorPolicy>().governor, "performance");
  EXPECT_EQ(r->Section<HostLinkFlapPolicy>().drop_window, milliseconds(10000));
  EXPECT_EQ(r->Section<HostLinkFlapPolicy>().window, milliseconds(3600000));
  EXPECT_EQ(r->Section<HostLinkFlapPolicy>().threshold, 3u);
  EXPECT_EQ(r->Section<HostLinkFlapPolicy>().recovery, milliseconds(0));
  EXPECT_EQ(r->Section<DeviceLimitsPolicy>().min_max_cq, 16384u);
  EXPECT_EQ(r->Section<DeviceLimitsPolicy>().min_max_mr, 1048576u);
}

TEST(ConfigParseTest, HostDeviceKeysAreValidated) {
  auto error = [](const char* text) {
    Result<Config> r = Parse(text);
    return r.ok() ? std::string("<accepted>") : r.error().message;
  };
  EXPECT_THAT(error("host:\n  link_flaps: {window: 10s, drop_window: 60s}\n"),
              HasSubstr("must not be shorter than drop_window"));
  EXPECT_THAT(error("host:\n  link_flaps: {threshold: 0}\n"), HasSubstr("host.link_flaps.threshold"));
  EXPECT_THAT(error("host:\n  link_flaps: {drop_window: 2h}\n"), HasSubstr("host.link_flaps.drop_window"));
  EXPECT_THAT(error("host:\n  cpu_governer: performance\n"), HasSubstr("did you mean \"cpu_governor\""));
  EXPECT_THAT(error("host:\n  device_access: {user: \"\"}\n"), HasSubstr("host.device_access.user"));
}

}  // namespace
}  // namespace rdmahd
