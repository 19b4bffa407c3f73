#include "parsers/devlink_health.h"

#include <gtest/gtest.h>
#include <linux/devlink.h>

#include <cerrno>
#include <functional>
#include <string>
#include <vector>

#include "tests/support/devlink_test_message.h"
#include "tests/support/genl_test_message.h"

namespace rdmahd {
namespace {

constexpr std::uint16_t kFamily = testing::kDevlinkTestFamily;
using testing::PutReporter;
using testing::ReporterSpec;

// mlx5's four reporters of one function: fw (diagnose and dump, no recovery), fw_fatal (after a
// firmware fatal error, recovered once, its dump taken then), and the uplink port's tx and rx.
std::vector<ReporterSpec> Mlx5Reporters() {
  ReporterSpec fw{.name = "fw", .auto_dump = 1};
  ReporterSpec fw_fatal{.name = "fw_fatal", .state = 1, .errors = 1, .recovers = 1, .grace_ms = 1200000,
                        .auto_recover = 1, .auto_dump = 1, .dump_ts_ms = 204791, .dump_ts_ns = 1764669364000000000};
  ReporterSpec tx{.port = 65535, .name = "tx", .grace_ms = 500, .auto_recover = 1, .auto_dump = 1};
  ReporterSpec rx{.port = 65535, .name = "rx", .errors = 3, .recovers = 3, .grace_ms = 500, .auto_recover = 1,
                  .auto_dump = 1};
  return {fw, fw_fatal, tx, rx};
}

TEST(DevlinkHealthTest, Mlx5ReportersFromADump) {
  // Two datagrams, as a dump arrives: three reporters, then the fourth and NLMSG_DONE.
  const auto specs = Mlx5Reporters();
  testing::GenlDatagram first, second;
  for (int i = 0; i < 3; ++i) PutReporter(first, specs[i]);
  PutReporter(second, specs[3]);
  second.Done();
  std::vector<DevlinkHealthReporter> reporters;
  auto done = ParseDevlinkHealthReporterDump(first.bytes(), kFamily, reporters);
  ASSERT_TRUE(done.ok()) << done.error().message;
  EXPECT_FALSE(*done);
  done = ParseDevlinkHealthReporterDump(second.bytes(), kFamily, reporters);
  ASSERT_TRUE(done.ok()) << done.error().message;
  EXPECT_TRUE(*done);
  ASSERT_EQ(reporters.size(), 4u);

  const DevlinkHealthReporter& fw = reporters[0];
  EXPECT_EQ(fw.bus_name, "pci");
  EXPECT_EQ(fw.dev_name, "0000:08:00.0");
  EXPECT_FALSE(fw.port_index.has_value());
  EXPECT_EQ(fw.name, "fw");
  EXPECT_EQ(fw.state, DevlinkHealthState::kHealthy);
  EXPECT_STREQ(DevlinkHealthStateName(fw.state), "healthy");
  EXPECT_FALSE(fw.graceful_period_ms.has_value());  // fw cannot recover: no recovery settings
  EXPECT_FALSE(fw.auto_recover.has_value());
  EXPECT_EQ(fw.auto_dump, std::optional<bool>(true));
  EXPECT_FALSE(fw.last_dump_ms_since_boot.has_value());

  const DevlinkHealthReporter& fatal = reporters[1];
  EXPECT_EQ(fatal.name, "fw_fatal");
  EXPECT_EQ(fatal.state, DevlinkHealthState::kError);
  EXPECT_STREQ(DevlinkHealthStateName(fatal.state), "error");
  EXPECT_EQ(fatal.error_count, 1u);
  EXPECT_EQ(fatal.recover_count, 1u);
  EXPECT_EQ(fatal.graceful_period_ms, std::optional<std::uint64_t>(1200000));
  EXPECT_EQ(fatal.auto_recover, std::optional<bool>(true));
  EXPECT_EQ(fatal.last_dump_ms_since_boot, std::optional<std::uint64_t>(204791));
  EXPECT_EQ(fatal.last_dump_realtime_ns, std::optional<std::uint64_t>(1764669364000000000));

  EXPECT_EQ(reporters[2].name, "tx");
  EXPECT_EQ(reporters[2].port_index, std::optional<std::uint32_t>(65535));
  EXPECT_EQ(reporters[3].name, "rx");
  EXPECT_EQ(reporters[3].error_count, 3u);
}

TEST(DevlinkHealthTest, OneReporterReplyAndAStateNewerThanTheDecoder) {
  testing::GenlDatagram d;
  ReporterSpec s{.name = "vnic", .state = 7};
  PutReporter(d, s, 9);
  auto r = ParseDevlinkHealthReporterReply(d.bytes(), kFamily, 9);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->name, "vnic");
  EXPECT_EQ(r->state, DevlinkHealthState::kUnknown);
  EXPECT_EQ(r->raw_state, 7u);
  EXPECT_FALSE(ParseDevlinkHealthReporterReply(d.bytes(), kFamily, 10).ok());  // another request's answer
}

// The VM's kernel has devlink but no devlink device: the dump is NLMSG_DONE alone.
TEST(DevlinkHealthTest, NoDevlinkDeviceIsAnEmptyDump) {
  testing::GenlDatagram d;
  d.Done();
  std::vector<DevlinkHealthReporter> reporters;
  auto done = ParseDevlinkHealthReporterDump(d.bytes(), kFamily, reporters);
  ASSERT_TRUE(done.ok()) << done.error().message;
  EXPECT_TRUE(*done);
  EXPECT_TRUE(reporters.empty());
}

TEST(DevlinkHealthTest, KernelErrorsKeepTheirErrno) {
  testing::GenlDatagram one;
  one.Error(ENOENT);
  auto r = ParseDevlinkHealthReporterReply(one.bytes(), kFamily);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().errno_value, ENOENT);

  testing::GenlDatagram failed_dump;  // a dump that failed part-way: NLMSG_DONE with -errno
  failed_dump.Done(EMSGSIZE);
  std::vector<DevlinkHealthReporter> reporters;
  auto done = ParseDevlinkHealthReporterDump(failed_dump.bytes(), kFamily, reporters);
  ASSERT_FALSE(done.ok());
  EXPECT_EQ(done.error().errno_value, EMSGSIZE);
}

TEST(DevlinkHealthTest, RefusesGarbledReportersWithAReason) {
  struct Case {
    std::string name;
    std::function<void(nlmsghdr*)> fill;
    std::string says;
  };
  auto nest = [](nlmsghdr* nlh, const std::function<void()>& inner) {
    nlattr* r = mnl_attr_nest_start(nlh, DEVLINK_ATTR_HEALTH_REPORTER);
    inner();
    mnl_attr_nest_end(nlh, r);
  };
  auto full = [](nlmsghdr* nlh) {
    mnl_attr_put_strz(nlh, DEVLINK_ATTR_HEALTH_REPORTER_NAME, "fw");
    mnl_attr_put_u8(nlh, DEVLINK_ATTR_HEALTH_REPORTER_STATE, 0);
    mnl_attr_put_u64(nlh, DEVLINK_ATTR_HEALTH_REPORTER_ERR_COUNT, 0);
    mnl_attr_put_u64(nlh, DEVLINK_ATTR_HEALTH_REPORTER_RECOVER_COUNT, 0);
  };
  auto handle = [](nlmsghdr* nlh) {
    mnl_attr_put_strz(nlh, DEVLINK_ATTR_BUS_NAME, "pci");
    mnl_attr_put_strz(nlh, DEVLINK_ATTR_DEV_NAME, "0000:08:00.0");
  };
  const Case cases[] = {
      {"no handle",
       [&](nlmsghdr* nlh) { nest(nlh, [&] { full(nlh); }); },
       "without its bus or device name"},
      {"no nest", [&](nlmsghdr* nlh) { handle(nlh); }, "no DEVLINK_ATTR_HEALTH_REPORTER nest"},
      {"no counts",
       [&](nlmsghdr* nlh) {
         handle(nlh);
         nest(nlh, [&] { mnl_attr_put_strz(nlh, DEVLINK_ATTR_HEALTH_REPORTER_NAME, "fw"); });
       },
       "reporter \"fw\" without its state, error count or recover count"},
      {"no name",
       [&](nlmsghdr* nlh) {
         handle(nlh);
         nest(nlh, [&] { mnl_attr_put_u8(nlh, DEVLINK_ATTR_HEALTH_REPORTER_STATE, 0); });
       },
       "a reporter without a name"},
      {"error count of 4 bytes",
       [&](nlmsghdr* nlh) {
         handle(nlh);
         nest(nlh, [&] { mnl_attr_put_u32(nlh, DEVLINK_ATTR_HEALTH_REPORTER_ERR_COUNT, 1); });
       },
       "DEVLINK_ATTR_HEALTH_REPORTER_ERR_COUNT has 4 bytes, a u64 needs 8"},
      {"state of 0 bytes",
       [&](nlmsghdr* nlh) {
         handle(nlh);
         nest(nlh, [&] { mnl_attr_put(nlh, DEVLINK_ATTR_HEALTH_REPORTER_STATE, 0, nullptr); });
       },
       "DEVLINK_ATTR_HEALTH_REPORTER_STATE has 0 bytes, a u8 needs 1"},
      {"escape in a name",
       [&](nlmsghdr* nlh) {
         mnl_attr_put_strz(nlh, DEVLINK_ATTR_BUS_NAME, "pci\x1b[2J");
         mnl_attr_put_strz(nlh, DEVLINK_ATTR_DEV_NAME, "0000:08:00.0");
       },
       "DEVLINK_ATTR_BUS_NAME has a byte outside printable ASCII"},
      {"long name",
       [&](nlmsghdr* nlh) {
         handle(nlh);
         const std::string long_name(65, 'x');
         nest(nlh, [&] { mnl_attr_put_strz(nlh, DEVLINK_ATTR_HEALTH_REPORTER_NAME, long_name.c_str()); });
       },
       "DEVLINK_ATTR_HEALTH_REPORTER_NAME of 65 bytes"},
      {"two nests",
       [&](nlmsghdr* nlh) {
         handle(nlh);
         nest(nlh, [&] { full(nlh); });
         nest(nlh, [&] { full(nlh); });
       },
       "two DEVLINK_ATTR_HEALTH_REPORTER nests"},
  };
  for (const Case& c : cases) {
    testing::GenlDatagram d;
    c.fill(d.Begin(kFamily, DEVLINK_CMD_HEALTH_REPORTER_GET));
    d.End();
    auto r = ParseDevlinkHealthReporterReply(d.bytes(), kFamily);
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_EQ(r.error().errno_value, EBADMSG) << c.name;
    EXPECT_NE(r.error().message.find(c.says), std::string::npos) << c.name << ": " << r.error().message;
  }
}

TEST(DevlinkHealthTest, EveryTruncationIsRefused) {
  // Every attribute the decoder requires comes last in the nest or is the nest itself, so any cut
  // either breaks a length or drops a required attribute.
  testing::GenlDatagram d;
  ReporterSpec s{.name = "fw_fatal", .state = 1, .errors = 2, .recovers = 1};
  PutReporter(d, s);
  for (const auto& prefix : testing::Truncations(d.bytes())) {
    auto r = ParseDevlinkHealthReporterReply(prefix, kFamily);
    ASSERT_FALSE(r.ok()) << prefix.size() << " bytes";
    EXPECT_EQ(r.error().errno_value, EBADMSG);
  }
}

}  // namespace
}  // namespace rdmahd
