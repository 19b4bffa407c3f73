// The devlink_health collector over a fake generic netlink transport answering with dumps built
// byte by byte from <linux/devlink.h> (the layout the kernel's devlink_nl_health_reporter_fill
// writes), as the VM's kernel has no devlink device to answer with reporters.
#include "collectors/devlink_health.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <libmnl/libmnl.h>
#include <linux/devlink.h>

#include "facts/devlink_health_facts.h"
#include "tests/support/devlink_test_message.h"
#include "tests/support/fake_genl_transport.h"
#include "tests/support/genl_test_message.h"
#include "tests/support/test_files.h"

namespace rdmahd {
namespace {

using ::testing::HasSubstr;
using testing::FakeGenlTransport;

constexpr std::uint16_t kDevlink = testing::kDevlinkTestFamily;
using testing::ReporterSpec;

// A kernel holding `reporters`: the dump in two datagrams (the second ending with NLMSG_DONE), as
// a dump larger than one buffer comes. Records what was asked.
struct Kernel {
  std::vector<ReporterSpec> reporters;
  std::vector<std::uint8_t> last_cmd;
  std::vector<bool> last_dump;
  int dump_errno = 0;

  std::unique_ptr<FakeGenlTransport> Transport() {
    return std::make_unique<FakeGenlTransport>(kDevlink, [this](const GenlMessage& m, bool dump)
                                                              -> Result<FakeGenlTransport::Datagrams> {
      last_cmd.push_back(m.cmd);
      last_dump.push_back(dump && (m.header.nlmsg_flags & NLM_F_DUMP) != 0);
      testing::GenlDatagram first, second;
      if (dump_errno != 0) {
        second.Done(dump_errno, m.header.nlmsg_seq);
        return FakeGenlTransport::Datagrams{second.bytes()};
      }
      for (std::size_t i = 0; i < reporters.size(); ++i) {
        testing::PutReporter(i < 2 ? first : second, reporters[i], m.header.nlmsg_seq);
      }
      second.Done(0, m.header.nlmsg_seq);
      FakeGenlTransport::Datagrams out;
      if (!first.bytes().empty()) out.push_back(first.bytes());
      out.push_back(second.bytes());
      return out;
    });
  }
};

Topology TwoMlx5AndRxe() {
  Topology t;
  t.class_dir_present = true;
  for (const char* name : {"mlx5_0", "mlx5_1", "rxe0"}) t.devices.emplace_back().name = name;
  t.devices[0].pci_address = "0000:08:00.0";
  t.devices[1].pci_address = "0000:08:00.1";
  return t;
}

const DevlinkHealthFacts* Facts(const testing::CollectedRun& r) { return r.snapshot.Get<DevlinkHealthFacts>(); }

TEST(DevlinkHealthCollectorTest, OneDumpIsSplitByPciFunctionAndRendered) {
  Kernel k;
  k.reporters = {
      {.dev = "0000:08:00.0", .name = "fw"},
      {.dev = "0000:08:00.0", .name = "fw_fatal", .state = 1, .errors = 2, .recovers = 1,
       .dump_ts_ns = 1764669364500000000},
      {.dev = "0000:08:00.0", .port = 65535, .name = "tx"},
      {.dev = "0000:08:00.0", .port = 65535, .name = "rx", .errors = 3, .recovers = 3},
      {.dev = "0000:08:00.1", .name = "fw"},
      {.dev = "0000:af:00.0", .name = "fw", .state = 1, .errors = 9},  // a function that is no RDMA device here
  };
  auto transport = k.Transport();
  FakeGenlTransport* fake = transport.get();
  DevlinkHealthCollector c(std::move(transport));
  testing::CollectedRun r = testing::CollectAndRender(c, testing::FakeKernelFs(), TwoMlx5AndRxe());
  ASSERT_TRUE(r.status.ok());
  EXPECT_TRUE(r.outcome.errors.empty());
  ASSERT_EQ(k.last_cmd, std::vector<std::uint8_t>{DEVLINK_CMD_HEALTH_REPORTER_GET});
  EXPECT_EQ(k.last_dump, std::vector<bool>{true});
  ASSERT_NE(Facts(r), nullptr);
  ASSERT_EQ(Facts(r)->devices.size(), 3u);
  const auto& d0 = Facts(r)->devices[0];
  EXPECT_TRUE(d0.read);
  ASSERT_EQ(d0.reporters.size(), 4u);
  EXPECT_EQ(d0.reporters[1].name, "fw_fatal");
  EXPECT_EQ(d0.reporters[1].state, DevlinkHealthState::kError);
  EXPECT_EQ(d0.reporters[3].port_index, 65535u);
  EXPECT_EQ(Facts(r)->devices[1].reporters.size(), 1u);
  EXPECT_FALSE(Facts(r)->devices[2].read);
  EXPECT_THAT(Facts(r)->devices[2].note, HasSubstr("no PCI function"));

  EXPECT_THAT(r.text, HasSubstr("rdma_devlink_health_reporter_healthy{device=\"mlx5_0\",reporter=\"fw_fatal\",port=\"\"} 0\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_devlink_health_reporter_healthy{device=\"mlx5_0\",reporter=\"fw\",port=\"\"} 1\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_devlink_health_reporter_errors_total{device=\"mlx5_0\",reporter=\"rx\",port=\"65535\"} 3\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_devlink_health_reporter_recoveries_total{device=\"mlx5_0\",reporter=\"fw_fatal\",port=\"\"} 1\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_devlink_health_reporter_last_dump_timestamp_seconds{device=\"mlx5_0\",reporter=\"fw_fatal\",port=\"\"} 1764669364.5\n"));
  EXPECT_THAT(r.text, ::testing::Not(HasSubstr("0000:af:00.0")));
  EXPECT_EQ(testing::RenderedFamilies(r.text), testing::DocumentedFamilies("(collector `devlink_health`)"));

  // One dump per collection, whatever the number of devices.
  testing::CollectAndRender(c, testing::FakeKernelFs(), TwoMlx5AndRxe());
  EXPECT_EQ(fake->exchanges, 2);
}

TEST(DevlinkHealthCollectorTest, ACaptureIsNotAskedAndSaysNotCaptured) {
  Kernel k;
  auto transport = k.Transport();
  FakeGenlTransport* fake = transport.get();
  DevlinkHealthCollector c(std::move(transport));
  testing::CollectedRun r = testing::CollectAndRender(c, NodeFs("/nonexistent-sys", "/nonexistent-proc"), TwoMlx5AndRxe());
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(fake->exchanges, 0);
  EXPECT_EQ(fake->family_lookups, 0);
  ASSERT_EQ(Facts(r)->devices.size(), 3u);
  for (const auto& d : Facts(r)->devices) {
    EXPECT_FALSE(d.read);
    EXPECT_THAT(d.note, HasSubstr("not captured"));
  }
  EXPECT_TRUE(r.outcome.errors.empty());
  EXPECT_EQ(r.text, "");
}

TEST(DevlinkHealthCollectorTest, NoFamilyIsUnknownWithoutAnErrorAndAFailedDumpIsAnError) {
  Kernel k;
  auto transport = k.Transport();
  transport->family_error = ENOENT;
  DevlinkHealthCollector no_devlink(std::move(transport));
  testing::CollectedRun r = testing::CollectAndRender(no_devlink, testing::FakeKernelFs(), TwoMlx5AndRxe());
  ASSERT_TRUE(r.status.ok());
  EXPECT_TRUE(r.outcome.errors.empty());
  EXPECT_FALSE(Facts(r)->devices[0].read);
  EXPECT_THAT(Facts(r)->devices[0].note, HasSubstr("not registered"));

  Kernel failing;
  failing.dump_errno = EPERM;
  DevlinkHealthCollector c(failing.Transport());
  testing::CollectedRun f = testing::CollectAndRender(c, testing::FakeKernelFs(), TwoMlx5AndRxe());
  ASSERT_TRUE(f.status.ok());
  ASSERT_EQ(f.outcome.errors.size(), 1u);
  EXPECT_FALSE(Facts(f)->devices[0].read);
  EXPECT_EQ(Facts(f)->devices[0].note, f.outcome.errors[0]);
}

// The real kernel's answer where it has devlink but no device registers reporters (the VM, a
// build host): an empty dump, every PCI device read with none.
TEST(DevlinkHealthCollectorTest, AnEmptyDumpIsReadWithNoReporters) {
  Kernel k;
  DevlinkHealthCollector c(k.Transport());
  testing::CollectedRun r = testing::CollectAndRender(c, testing::FakeKernelFs(), TwoMlx5AndRxe());
  ASSERT_TRUE(r.status.ok());
  EXPECT_TRUE(Facts(r)->devices[0].read);
  EXPECT_TRUE(Facts(r)->devices[0].reporters.empty());
  EXPECT_EQ(r.text, "");
}

TEST(DevlinkHealthCollectorTest, RequestAndFamilyReplyBytes) {
  const auto req = BuildGenlFamilyRequest("devlink", 7);
  auto msgs = SplitNlMessages(req, "test");
  ASSERT_TRUE(msgs.ok());
  EXPECT_EQ(msgs->front().header.nlmsg_type, GENL_ID_CTRL);
  auto g = SplitGenlMessage(msgs->front(), "test");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->cmd, CTRL_CMD_GETFAMILY);
  auto attrs = SplitNlAttrs(g->attrs, "test", "request");
  ASSERT_TRUE(attrs.ok());
  ASSERT_EQ(attrs->size(), 1u);
  EXPECT_EQ((*attrs)[0].type, CTRL_ATTR_FAMILY_NAME);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>((*attrs)[0].payload.data())), "devlink");

  testing::GenlDatagram reply;
  nlmsghdr* nlh = reply.Begin(GENL_ID_CTRL, CTRL_CMD_NEWFAMILY, 7);
  mnl_attr_put_strz(nlh, CTRL_ATTR_FAMILY_NAME, "devlink");
  mnl_attr_put_u16(nlh, CTRL_ATTR_FAMILY_ID, 27);
  reply.End();
  auto id = ParseGenlFamilyReply(reply.bytes(), 7);
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_EQ(*id, 27);
  EXPECT_FALSE(ParseGenlFamilyReply(reply.bytes(), 8).ok());  // another request's answer

  testing::GenlDatagram missing;
  missing.Error(ENOENT, 7);
  auto none = ParseGenlFamilyReply(missing.bytes(), 7);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().errno_value, ENOENT);

  testing::GenlDatagram no_id;
  no_id.Begin(GENL_ID_CTRL, CTRL_CMD_NEWFAMILY, 7);
  no_id.End();
  auto bad = ParseGenlFamilyReply(no_id.bytes(), 7);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().errno_value, EBADMSG);
}

// The real socket on this machine's kernel: the devlink family resolves (or the kernel has none),
// and a dump of every reporter parses (a build host and the VM have no devlink device with
// reporters, so it is empty there). Never a malformed answer.
TEST(DevlinkHealthCollectorTest, RealKernelAnswersParse) {
  MnlGenlTransport transport(DEVLINK_GENL_NAME);
  auto family = transport.FamilyId();
  if (!family) {
    EXPECT_TRUE(family.error().errno_value == ENOENT || family.error().errno_value == EPROTONOSUPPORT)
        << family.error().message;
    GTEST_SKIP() << family.error().message;
  }
  DevlinkHealthCollector c(std::make_unique<MnlGenlTransport>(DEVLINK_GENL_NAME));
  testing::CollectedRun r = testing::CollectAndRender(c, testing::FakeKernelFs(), TwoMlx5AndRxe());
  ASSERT_TRUE(r.status.ok());
  EXPECT_TRUE(r.outcome.errors.empty()) << r.outcome.errors.front();
}

}  // namespace
}  // namespace rdmahd
