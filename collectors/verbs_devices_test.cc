#include "collectors/verbs_devices.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/test_files.h"
#include "tests/support/test_paths.h"

namespace rdmahd {
namespace {

using ::testing::HasSubstr;

// What the fake node has; shared between the test and the fake provider/handles it hands out.
struct FakeNode {
  struct Device {
    VerbsDeviceId id;
    VerbsDeviceAttrs attrs;
    std::map<std::uint32_t, VerbsPortAttrs> ports;
    int open_errno = 0;                       // ibv_open_device fails with this
    std::map<std::uint32_t, int> port_errno;  // ibv_query_port fails with this
    int generation = 0;  // bumped when the device is re-created: older handles see ENODEV
  };
  std::map<std::string, Device> devices;
  int list_errno = 0;
  int list_calls = 0, open_calls = 0, query_device_calls = 0, query_port_calls = 0, open_handles = 0;
};

class FakeHandle : public VerbsDeviceHandle {
 public:
  FakeHandle(std::shared_ptr<FakeNode> node, std::string name, int generation)
      : node_(std::move(node)), name_(std::move(name)), generation_(generation) {
    ++node_->open_handles;
  }
  ~FakeHandle() override { --node_->open_handles; }
  Result<VerbsDeviceAttrs> QueryDevice() override {
    ++node_->query_device_calls;
    const FakeNode::Device* d = Live();
    if (d == nullptr) return Error::FromErrno("ibv_query_device " + name_, ENODEV);
    return d->attrs;
  }
  Result<VerbsPortAttrs> QueryPort(std::uint32_t port) override {
    ++node_->query_port_calls;
    const FakeNode::Device* d = Live();
    const std::string what = "ibv_query_port " + name_ + "/" + std::to_string(port);
    if (d == nullptr) return Error::FromErrno(what, ENODEV);
    if (auto e = d->port_errno.find(port); e != d->port_errno.end()) return Error::FromErrno(what, e->second);
    return d->ports.at(port);
  }

 private:
  const FakeNode::Device* Live() const {
    auto it = node_->devices.find(name_);
    return it == node_->devices.end() || it->second.generation != generation_ ? nullptr : &it->second;
  }
  std::shared_ptr<FakeNode> node_;
  std::string name_;
  int generation_;
};

class FakeProvider : public VerbsProvider {
 public:
  explicit FakeProvider(std::shared_ptr<FakeNode> node) : node_(std::move(node)) {}
  Result<std::vector<VerbsDeviceId>> ListDevices() override {
    ++node_->list_calls;
    if (node_->list_errno != 0) return Error::FromErrno("ibv_get_device_list", node_->list_errno);
    std::vector<VerbsDeviceId> out;
    for (const auto& [name, d] : node_->devices) out.push_back(d.id);
    return out;
  }
  Result<std::unique_ptr<VerbsDeviceHandle>> Open(const VerbsDeviceId& id) override {
    ++node_->open_calls;
    auto it = node_->devices.find(id.name);
    if (it == node_->devices.end()) return Error::FromErrno("ibv_open_device " + id.name, ENODEV);
    if (it->second.open_errno != 0) {
      return Error::FromErrno("ibv_open_device " + id.name + " (/dev/infiniband/uverbs0)", it->second.open_errno);
    }
    return std::unique_ptr<VerbsDeviceHandle>(std::make_unique<FakeHandle>(node_, id.name, it->second.generation));
  }

 private:
  std::shared_ptr<FakeNode> node_;
};

FakeNode::Device Mlx5(const std::string& name, std::uint32_t index, int ports = 1) {
  FakeNode::Device d;
  d.id = {name, index};
  d.attrs.max_qp = 262144;
  d.attrs.max_qp_wr = 32768;
  d.attrs.max_sge = 30;
  d.attrs.max_cq = 16777216;
  d.attrs.max_cqe = 4194303;
  d.attrs.max_mr = 16777216;
  d.attrs.max_mr_size = 0xffffffffffffffffull;
  d.attrs.max_pd = 16777216;
  d.attrs.max_srq = 8388608;
  d.attrs.max_srq_wr = 32767;
  d.attrs.max_qp_rd_atom = 16;
  d.attrs.phys_port_cnt = static_cast<std::uint32_t>(ports);
  for (int p = 1; p <= ports; ++p) {
    VerbsPortAttrs a;
    a.port = static_cast<std::uint32_t>(p);
    a.state = 4;
    a.active_mtu_bytes = 4096;
    a.max_mtu_bytes = 4096;
    a.gid_tbl_len = 255;
    a.max_msg_sz = 1073741824;
    d.ports[a.port] = a;
  }
  return d;
}

struct CollectRun {
  Status status;
  CollectorOutcome outcome;
  Snapshot snapshot;
  std::string text;
  const VerbsFacts* facts() const { return snapshot.Get<VerbsFacts>(); }
};

CollectRun Collect(VerbsDevicesCollector& c, const Config& config = {}, const std::string& sysfs = "/sys") {
  NodeFs fs(sysfs, "/proc");
  Topology topology;  // the verbs collector asks libibverbs, not the topology
  CollectContext ctx{fs, config, topology};
  CollectRun r;
  r.status = c.Collect(ctx, r.snapshot, r.outcome);
  MetricSink sink;
  c.Render(r.snapshot, sink);
  r.text = sink.Serialize();
  return r;
}

struct Fixture {
  std::shared_ptr<FakeNode> node = std::make_shared<FakeNode>();
  VerbsDevicesCollector collector{[n = node] { return std::make_unique<FakeProvider>(n); }};
};

TEST(VerbsDevicesTest, ReportsLimitsAndPortMtusAsMetrics) {
  Fixture f;
  f.node->devices["mlx5_0"] = Mlx5("mlx5_0", 0);
  auto rxe = Mlx5("rxe0", 1);
  rxe.attrs.max_qp = 1048560;
  rxe.attrs.max_cqe = 32767;
  rxe.ports[1].active_mtu_bytes = 1024;  // veth at MTU 1500
  f.node->devices["rxe0"] = rxe;
  CollectRun r = Collect(f.collector);
  ASSERT_TRUE(r.status.ok()) << r.status.error().message;
  EXPECT_TRUE(r.outcome.errors.empty());
  ASSERT_NE(r.facts(), nullptr);
  EXPECT_TRUE(r.facts()->queried);
  ASSERT_EQ(r.facts()->devices.size(), 2u);
  EXPECT_EQ(r.facts()->devices[1].name, "rxe0");
  EXPECT_THAT(r.text, HasSubstr("rdma_device_max_qp{device=\"mlx5_0\"} 262144\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_device_max_qp{device=\"rxe0\"} 1048560\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_device_max_cqe{device=\"rxe0\"} 32767\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_device_max_mr_size_bytes{device=\"mlx5_0\"} 18446744073709551616\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_device_max_qp_rd_atom{device=\"mlx5_0\"} 16\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_port_active_mtu_bytes{device=\"mlx5_0\",port=\"1\"} 4096\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_port_active_mtu_bytes{device=\"rxe0\",port=\"1\"} 1024\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_port_max_mtu_bytes{device=\"rxe0\",port=\"1\"} 4096\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_port_verbs_state_id{device=\"rxe0\",port=\"1\"} 4\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_port_gid_table_size{device=\"mlx5_0\",port=\"1\"} 255\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_port_max_message_size_bytes{device=\"mlx5_0\",port=\"1\"} 1073741824\n"));
}

TEST(VerbsDevicesTest, NotTheLiveSysfsRootQueriesNothingAndRendersNothing) {
  Fixture f;
  f.node->devices["mlx5_0"] = Mlx5("mlx5_0", 0);
  CollectRun r = Collect(f.collector, {}, "/work/tests/fixtures/sysfs/mlx5-roce/sys");
  ASSERT_TRUE(r.status.ok());
  EXPECT_TRUE(r.outcome.errors.empty());
  ASSERT_NE(r.facts(), nullptr);
  EXPECT_FALSE(r.facts()->queried);
  EXPECT_THAT(r.facts()->not_queried_reason, HasSubstr("--path.sysfs is not /sys"));
  EXPECT_EQ(r.text, "");
  EXPECT_EQ(f.node->list_calls, 0);  // the provider was never even created
  EXPECT_TRUE(NodeFs::IsLiveSysfsRoot("/sys/"));
  EXPECT_FALSE(NodeFs::IsLiveSysfsRoot("/sysfs"));
  EXPECT_FALSE(NodeFs::IsLiveSysfsRoot("/host/sys"));
}

TEST(VerbsDevicesTest, SwitchingToAFixtureRootClosesCachedDevices) {
  Fixture f;
  f.node->devices["mlx5_0"] = Mlx5("mlx5_0", 0);
  Collect(f.collector);
  EXPECT_EQ(f.node->open_handles, 1);
  Collect(f.collector, {}, "/tmp/fixture");
  EXPECT_EQ(f.node->open_handles, 0);
}

TEST(VerbsDevicesTest, OpensOnceAndQueriesDeviceAttributesOnce) {
  Fixture f;
  f.node->devices["mlx5_0"] = Mlx5("mlx5_0", 0, 2);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Collect(f.collector).status.ok());
  EXPECT_EQ(f.node->open_calls, 1);
  EXPECT_EQ(f.node->query_device_calls, 1);
  EXPECT_EQ(f.node->query_port_calls, 6);  // two ports, every collection: the MTU can change
  EXPECT_EQ(f.collector.open_devices(), 1u);
  // The port MTU follows the node between collections without a reopen.
  f.node->devices["mlx5_0"].ports[2].active_mtu_bytes = 1024;
  CollectRun r = Collect(f.collector);
  EXPECT_THAT(r.text, HasSubstr("rdma_port_active_mtu_bytes{device=\"mlx5_0\",port=\"2\"} 1024\n"));
  EXPECT_EQ(f.node->open_calls, 1);
}

TEST(VerbsDevicesTest, OpenFailureSkipsOnlyThatDeviceNamingItAndErrno) {
  Fixture f;
  f.node->devices["mlx5_0"] = Mlx5("mlx5_0", 0);
  f.node->devices["mlx5_1"] = Mlx5("mlx5_1", 1);
  f.node->devices["mlx5_1"].open_errno = EACCES;  // /dev/infiniband/uverbs1 not mapped into a container
  f.node->devices["mlx5_2"] = Mlx5("mlx5_2", 2);
  f.node->devices["mlx5_2"].open_errno = ENOENT;
  CollectRun r = Collect(f.collector);
  ASSERT_TRUE(r.status.ok());
  ASSERT_EQ(r.outcome.errors.size(), 2u);
  EXPECT_THAT(r.outcome.errors[0], HasSubstr("device mlx5_1 skipped"));
  EXPECT_THAT(r.outcome.errors[0], HasSubstr("Permission denied"));
  EXPECT_THAT(r.outcome.errors[1], HasSubstr("device mlx5_2 skipped"));
  EXPECT_THAT(r.outcome.errors[1], HasSubstr("No such file or directory"));
  ASSERT_EQ(r.facts()->devices.size(), 1u);
  EXPECT_EQ(r.facts()->devices[0].name, "mlx5_0");
  // The unopened devices stay in the facts with the reason, so their checks say "unknown".
  ASSERT_EQ(r.facts()->unopened.size(), 2u);
  EXPECT_EQ(r.facts()->unopened[0].name, "mlx5_1");
  EXPECT_THAT(r.facts()->unopened[0].reason, HasSubstr("Permission denied"));
  EXPECT_EQ(r.facts()->unopened[1].name, "mlx5_2");
  EXPECT_THAT(r.text, ::testing::Not(HasSubstr("mlx5_1")));
  // A failed open is retried by the next collection, and succeeds once the device node is accessible.
  f.node->devices["mlx5_1"].open_errno = 0;
  CollectRun again = Collect(f.collector);
  EXPECT_EQ(again.outcome.errors.size(), 1u);
  EXPECT_EQ(again.facts()->devices.size(), 2u);
}

TEST(VerbsDevicesTest, PortQueryErrorSkipsThePortOnly) {
  Fixture f;
  f.node->devices["mlx5_0"] = Mlx5("mlx5_0", 0, 2);
  f.node->devices["mlx5_0"].port_errno[1] = EINVAL;
  CollectRun r = Collect(f.collector);
  ASSERT_EQ(r.outcome.errors.size(), 1u);
  EXPECT_THAT(r.outcome.errors[0], HasSubstr("port mlx5_0/1 skipped"));
  ASSERT_EQ(r.facts()->devices.size(), 1u);
  ASSERT_EQ(r.facts()->devices[0].ports.size(), 1u);
  EXPECT_EQ(r.facts()->devices[0].ports[0].port, 2u);
  EXPECT_THAT(r.text, HasSubstr("rdma_device_max_qp{device=\"mlx5_0\"}"));  // device facts still there
}

TEST(VerbsDevicesTest, DeviceListChangesOpenNewAndCloseRemovedDevices) {
  Fixture f;
  f.node->devices["mlx5_0"] = Mlx5("mlx5_0", 0);
  Collect(f.collector);
  EXPECT_EQ(f.node->open_handles, 1);
  f.node->devices["mlx5_1"] = Mlx5("mlx5_1", 1);
  CollectRun added = Collect(f.collector);
  EXPECT_EQ(added.facts()->devices.size(), 2u);
  EXPECT_EQ(f.node->open_calls, 2);
  EXPECT_EQ(f.node->open_handles, 2);
  f.node->devices.erase("mlx5_0");
  CollectRun removed = Collect(f.collector);
  ASSERT_EQ(removed.facts()->devices.size(), 1u);
  EXPECT_EQ(removed.facts()->devices[0].name, "mlx5_1");
  EXPECT_TRUE(removed.outcome.errors.empty());
  EXPECT_EQ(f.node->open_handles, 1);  // mlx5_0's context was closed
  EXPECT_EQ(f.collector.open_devices(), 1u);
}

TEST(VerbsDevicesTest, RecreatedDeviceUnderTheSameNameIsReopened) {
  Fixture f;
  f.node->devices["rxe0"] = Mlx5("rxe0", 3);
  Collect(f.collector);
  // `rdma link delete rxe0; rdma link add rxe0 ...`: new kernel index, new attributes.
  auto recreated = Mlx5("rxe0", 4);
  recreated.generation = 1;
  recreated.attrs.max_qp = 1000;
  f.node->devices["rxe0"] = recreated;
  CollectRun r = Collect(f.collector);
  EXPECT_TRUE(r.outcome.errors.empty());
  EXPECT_EQ(f.node->open_calls, 2);
  EXPECT_EQ(f.node->open_handles, 1);
  EXPECT_THAT(r.text, HasSubstr("rdma_device_max_qp{device=\"rxe0\"} 1000\n"));
}

TEST(VerbsDevicesTest, StaleContextIsReopenedWithinTheSameCollection) {
  Fixture f;
  f.node->devices["rxe0"] = Mlx5("rxe0", std::numeric_limits<std::uint32_t>::max());
  f.node->devices["rxe0"].id.kernel_index.reset();  // no netlink device index on this kernel
  Collect(f.collector);
  // Re-created with the same identity as far as the list can tell: the old context says ENODEV.
  f.node->devices["rxe0"].generation = 1;
  f.node->devices["rxe0"].ports[1].active_mtu_bytes = 2048;
  CollectRun r = Collect(f.collector);
  EXPECT_TRUE(r.outcome.errors.empty()) << r.outcome.errors[0];
  EXPECT_EQ(f.node->open_calls, 2);
  EXPECT_THAT(r.text, HasSubstr("rdma_port_active_mtu_bytes{device=\"rxe0\",port=\"1\"} 2048\n"));
}

TEST(VerbsDevicesTest, DeviceVanishingAfterOpenIsSkippedNotFatal) {
  Fixture f;
  f.node->devices["mlx5_0"] = Mlx5("mlx5_0", 0);
  f.node->devices["mlx5_1"] = Mlx5("mlx5_1", 1);
  f.node->devices["mlx5_1"].port_errno[1] = ENODEV;  // gone between open and port query
  CollectRun r = Collect(f.collector);
  ASSERT_TRUE(r.status.ok());
  ASSERT_EQ(r.outcome.errors.size(), 1u);
  EXPECT_THAT(r.outcome.errors[0], HasSubstr("device mlx5_1 skipped"));
  EXPECT_THAT(r.outcome.errors[0], HasSubstr("No such device"));
  EXPECT_EQ(r.facts()->devices.size(), 1u);
  EXPECT_EQ(f.node->open_handles, 1);
}

TEST(VerbsDevicesTest, DeviceFilterAppliesToLibibverbsNames) {
  Fixture f;
  f.node->devices["mlx5_0"] = Mlx5("mlx5_0", 0);
  f.node->devices["mlx5_bond_0"] = Mlx5("mlx5_bond_0", 1);
  Config config;
  config.devices.exclude = {"mlx5_bond_.*"};
  CollectRun r = Collect(f.collector, config);
  ASSERT_EQ(r.facts()->devices.size(), 1u);
  EXPECT_EQ(r.facts()->devices[0].name, "mlx5_0");
  EXPECT_EQ(f.node->open_calls, 1);  // the excluded device is never opened
}

TEST(VerbsDevicesTest, NoDevicesIsAnEmptySuccessAndListFailureIsAnError) {
  Fixture f;
  CollectRun none = Collect(f.collector);
  ASSERT_TRUE(none.status.ok());
  EXPECT_TRUE(none.facts()->queried);
  EXPECT_TRUE(none.facts()->devices.empty());
  EXPECT_EQ(none.text, "");
  f.node->list_errno = ENOMEM;
  CollectRun failed = Collect(f.collector);
  ASSERT_FALSE(failed.status.ok());
  EXPECT_THAT(failed.status.error().message, HasSubstr("ibv_get_device_list"));
}

// docs/metrics.md's verbs section lists exactly the families the collector renders. (The daemon
// e2e test cannot see them: on fixture trees the collector renders nothing.)
TEST(VerbsDevicesTest, MetricsDocSectionListsExactlyTheRenderedFamilies) {
  Fixture f;
  f.node->devices["mlx5_0"] = Mlx5("mlx5_0", 0);
  CollectRun r = Collect(f.collector);
  const std::set<std::string> rendered = testing::RenderedFamilies(r.text);
  const std::set<std::string> documented = testing::DocumentedFamilies("(collector `verbs`)");
  EXPECT_EQ(documented, rendered);
  EXPECT_EQ(rendered.size(), 16u);
}

// The registered collector on this machine's own /sys, with the real libibverbs: the build hosts
// have no RDMA device (and no ib_uverbs), which must be a successful collection of zero devices.
TEST(VerbsDevicesTest, RealProviderOnADeviceLessHostIsAnEmptySuccess) {
  auto listed = MakeLibibverbsProvider()->ListDevices();
  ASSERT_TRUE(listed.ok()) << listed.error().message;
  if (!listed->empty()) GTEST_SKIP() << "this host has RDMA devices";
  VerbsDevicesCollector collector;
  CollectRun r = Collect(collector);
  ASSERT_TRUE(r.status.ok()) << r.status.error().message;
  EXPECT_TRUE(r.facts()->queried);
  EXPECT_TRUE(r.facts()->devices.empty());
  EXPECT_TRUE(r.outcome.errors.empty());
  EXPECT_EQ(r.text, "");
}

}  // namespace
}  // namespace rdmahd
