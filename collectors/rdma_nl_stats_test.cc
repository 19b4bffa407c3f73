#include "collectors/rdma_nl_stats.h"

#include <gtest/gtest.h>
#include <libmnl/libmnl.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "collectors/rdma_devices.h"
#include "common/netlink_parse.h"
#include "tests/support/nldev_test_message.h"
#include "tests/support/test_paths.h"
#include "tests/support/topology.h"

namespace rdmahd {
namespace {

// The kernel's side: a device table (name -> index) and each port's counters, answering the two
// requests the way rdma_nl does (an unknown index is EINVAL).
class FakeKernel : public RdmaNetlinkTransport {
 public:
  std::map<std::string, std::uint32_t> index_of;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<NldevHwCounter>> counters;
  int dumps = 0, stat_gets = 0;
  int fail_with = 0;  // non-zero: every request answers this errno

  Result<std::vector<std::vector<std::uint8_t>>> Exchange(std::span<const std::uint8_t> request, bool dump) override {
    auto messages = SplitNlMessages(request, "test");
    EXPECT_TRUE(messages.ok());
    if (!messages.ok() || messages->size() != 1) return Error{"bad request", EINVAL};
    const nlmsghdr& h = messages->front().header;
    testing::NldevDatagram d;
    if (fail_with != 0) {
      d.Error(h.nlmsg_seq, fail_with);
      return std::vector<std::vector<std::uint8_t>>{d.bytes()};
    }
    if (h.nlmsg_type == testing::kNldevGet) {
      EXPECT_TRUE(dump);
      EXPECT_TRUE(h.nlmsg_flags & NLM_F_DUMP);
      ++dumps;
      std::vector<std::vector<std::uint8_t>> out;
      for (const auto& [name, index] : index_of) {  // one device per datagram, then DONE
        testing::NldevDatagram one;
        nlmsghdr* nlh = one.Add(testing::kNldevGet, h.nlmsg_seq);
        mnl_attr_put_u32(nlh, RDMA_NLDEV_ATTR_DEV_INDEX, index);
        mnl_attr_put_strz(nlh, RDMA_NLDEV_ATTR_DEV_NAME, name.c_str());
        one.Close(nlh);
        out.push_back(one.bytes());
      }
      d.Done(h.nlmsg_seq);
      out.push_back(d.bytes());
      return out;
    }
    EXPECT_EQ(h.nlmsg_type, testing::kNldevStatGet);
    EXPECT_FALSE(dump);
    ++stat_gets;
    auto attrs = SplitNlAttrs(messages->front().body, "test", "request");
    std::uint32_t index = 0, port = 0;
    for (const NlAttr& a : *attrs) {
      if (a.type == RDMA_NLDEV_ATTR_DEV_INDEX) std::memcpy(&index, a.payload.data(), 4);
      if (a.type == RDMA_NLDEV_ATTR_PORT_INDEX) std::memcpy(&port, a.payload.data(), 4);
    }
    std::string name;
    for (const auto& [n, i] : index_of) {
      if (i == index) name = n;
    }
    auto it = counters.find({index, port});
    if (name.empty() || it == counters.end()) {
      d.Error(h.nlmsg_seq, EINVAL);
    } else {
      testing::PutNldevStatReply(d, h.nlmsg_seq, index, name, port, it->second);
    }
    return std::vector<std::vector<std::uint8_t>>{d.bytes()};
  }
};

TEST(RdmaNlStatsTest, DeviceIndexesAreListedOnceAndAgainWhenStale) {
  auto kernel = std::make_unique<FakeKernel>();
  FakeKernel& k = *kernel;
  k.index_of = {{"mlx5_0", 1}, {"mlx5_1", 2}};
  k.counters[{1, 1}] = {{"out_of_buffer", 10}};
  k.counters[{2, 1}] = {{"out_of_buffer", 20}};
  RdmaNetlinkStats stats(std::move(kernel));

  auto a = stats.PortCounters("mlx5_1", 1);
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->at(0).value, 20u);
  ASSERT_TRUE(stats.PortCounters("mlx5_0", 1).ok());
  EXPECT_EQ(k.dumps, 1);  // the index table is kept
  EXPECT_EQ(k.stat_gets, 2);

  // mlx5_1 re-created under a new index (driver reload): the stale index is refused, the table is
  // listed again and the request repeated.
  k.index_of["mlx5_1"] = 7;
  k.counters[{7, 1}] = {{"out_of_buffer", 70}};
  k.counters.erase({2, 1});
  auto b = stats.PortCounters("mlx5_1", 1);
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(b->at(0).value, 70u);
  EXPECT_EQ(k.dumps, 2);

  auto gone = stats.PortCounters("mlx5_9", 1);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().errno_value, ENODEV);
  EXPECT_NE(gone.error().message.find("mlx5_9/1: "), std::string::npos);

  auto no_port = stats.PortCounters("mlx5_0", 2);  // EINVAL twice: the error names the port
  ASSERT_FALSE(no_port.ok());
  EXPECT_EQ(no_port.error().errno_value, EINVAL);
  EXPECT_NE(no_port.error().message.find("mlx5_0/2: "), std::string::npos);
}

// ---- the devices collector with an injected kernel --------------------------------------------
TEST(RdmaNlStatsTest, DevicesCollectorTakesHwCountersFromNetlinkAndFallsBackToFiles) {
  auto kernel = std::make_unique<FakeKernel>();
  FakeKernel& k = *kernel;
  k.index_of = {{"mlx5_0", 1}, {"mlx5_1", 2}};
  // Different values from the fixture's files, a counter only netlink has (optional counters), and
  // no lifespan (a setting, not a counter): that one must still come from its file.
  k.counters[{1, 1}] = {{"out_of_buffer", 1111}, {"np_cnp_sent", 2222}, {"optional_only", 5}};
  k.counters[{2, 1}] = {{"out_of_buffer", 3333}};
  RdmaDevicesCollector c(std::make_unique<RdmaNetlinkStats>(std::move(kernel)));
  NodeFs fs = NodeFs(testing::ProjectFixture("sysfs/mlx5-roce/sys"), "/nonexistent-proc").AskingKernelForTest();
  Config config;
  Topology topology = testing::DiscoverTopology(fs, config);
  CollectContext ctx{fs, config, topology};
  auto collect = [&](CollectorOutcome& outcome) {
    Snapshot snapshot;
    EXPECT_TRUE(c.Collect(ctx, snapshot, outcome).ok());
    return *snapshot.Get<RdmaDevicesFacts>();
  };
  auto file_value = [&](const std::string& device, const std::string& counter) {
    auto text = fs.ReadFile(fs.Sys("class/infiniband/" + device + "/ports/1/hw_counters/" + counter));
    EXPECT_TRUE(text.ok());
    return std::stoull(text.ok() ? *text : "0");
  };
  CollectorOutcome o1;
  RdmaDevicesFacts f1 = collect(o1);
  EXPECT_TRUE(o1.errors.empty());
  const CounterValues& hw = f1.devices.at(0).ports.at(0).hw_counters;
  EXPECT_EQ(hw.at("out_of_buffer"), 1111u);
  EXPECT_EQ(hw.at("np_cnp_sent"), 2222u);
  EXPECT_EQ(hw.at("lifespan"), file_value("mlx5_0", "lifespan"));  // not in the answer: its file
  EXPECT_EQ(hw.at("rx_write_requests"), file_value("mlx5_0", "rx_write_requests"));
  EXPECT_EQ(hw.slot_count(), hw.size());         // every listed counter has a value
  EXPECT_FALSE(hw.contains("optional_only"));    // the files name the counters
  EXPECT_EQ(f1.devices.at(1).ports.at(0).hw_counters.at("out_of_buffer"), 3333u);
  const int gets = k.stat_gets;
  EXPECT_EQ(gets, 2);  // one request per port

  // The kernel starts refusing: that port's counters come from the files, the switch is reported
  // once, and netlink is not asked again for it.
  k.fail_with = EOPNOTSUPP;
  CollectorOutcome o2;
  RdmaDevicesFacts f2 = collect(o2);
  EXPECT_EQ(f2.devices.at(0).ports.at(0).hw_counters.at("np_cnp_sent"), file_value("mlx5_0", "np_cnp_sent"));
  ASSERT_EQ(o2.errors.size(), 2u);
  EXPECT_NE(o2.errors[0].find("hw_counters over RDMA netlink: mlx5_0/1: "), std::string::npos) << o2.errors[0];
  EXPECT_NE(o2.errors[0].find("reading the files for this port from now on"), std::string::npos);
  const int after_failure = k.stat_gets;
  CollectorOutcome o3;
  RdmaDevicesFacts f3 = collect(o3);
  EXPECT_TRUE(o3.errors.empty());
  EXPECT_EQ(k.stat_gets, after_failure);
  EXPECT_EQ(f3.devices.at(1).ports.at(0).hw_counters.at("out_of_buffer"), file_value("mlx5_1", "out_of_buffer"));
}

// A captured tree: hw_counters come from its files, and the kernel here (which knows nothing of the
// captured devices, or other devices of the same names) is never asked.
TEST(RdmaNlStatsTest, DevicesCollectorNeverAsksTheKernelAboutACapture) {
  auto kernel = std::make_unique<FakeKernel>();
  FakeKernel& k = *kernel;
  k.index_of = {{"mlx5_0", 1}, {"mlx5_1", 2}};
  k.counters[{1, 1}] = {{"out_of_buffer", 1111}};
  k.counters[{2, 1}] = {{"out_of_buffer", 3333}};
  RdmaDevicesCollector c(std::make_unique<RdmaNetlinkStats>(std::move(kernel)));
  NodeFs fs(testing::ProjectFixture("sysfs/mlx5-roce/sys"), "/nonexistent-proc");
  ASSERT_FALSE(fs.asks_kernel());
  Config config;
  Topology topology = testing::DiscoverTopology(fs, config);
  CollectContext ctx{fs, config, topology};
  Snapshot snapshot;
  CollectorOutcome outcome;
  ASSERT_TRUE(c.Collect(ctx, snapshot, outcome).ok());
  EXPECT_TRUE(outcome.errors.empty());
  EXPECT_EQ(k.stat_gets, 0);
  auto file = fs.ReadFile(fs.Sys("class/infiniband/mlx5_0/ports/1/hw_counters/out_of_buffer"));
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(snapshot.Get<RdmaDevicesFacts>()->devices.at(0).ports.at(0).hw_counters.at("out_of_buffer"),
            std::stoull(*file));
}

}  // namespace
}  // namespace rdmahd
