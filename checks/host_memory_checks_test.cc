// The registered host memory checks end to end on tests/fixtures/host/numa-misplaced: topology,
// the hugepages and workloads collectors, then the checks by name.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "collectors/hugepages.h"
#include "collectors/workloads.h"
#include "core/check.h"
#include "tests/support/test_paths.h"
#include "tests/support/topology.h"

namespace rdmahd {
namespace {

using ::testing::HasSubstr;

Config FixturePolicy() {
  auto loaded = LoadConfigFile(testing::ProjectFixture("host/numa-misplaced/config.yaml"),
                               PluginNames(std::vector<std::string>{}));
  EXPECT_TRUE(loaded.ok()) << loaded.error().message;
  return loaded.ok() ? *loaded : Config{};
}

Snapshot CollectFixture(const Config& config) {
  NodeFs fs(testing::ProjectFixture("host/numa-misplaced/sys"), testing::ProjectFixture("host/numa-misplaced/proc"));
  Topology topology = testing::DiscoverTopology(fs, config);
  CollectContext ctx{fs, config, topology};
  Snapshot snapshot;
  CollectorOutcome outcome;
  HugepagesCollector hugepages;
  WorkloadsCollector workloads;
  EXPECT_TRUE(hugepages.Collect(ctx, snapshot, outcome).ok());
  EXPECT_TRUE(workloads.Collect(ctx, snapshot, outcome).ok());
  snapshot.Put(topology);
  return snapshot;
}

std::map<std::string, CheckResult> BySubject(const std::vector<CheckResult>& results) {
  std::map<std::string, CheckResult> out;
  for (const auto& r : results) out[r.subject] = r;
  return out;
}

TEST(HostMemoryChecksTest, HugepagesFreeOnTheFixture) {
  const Config config = FixturePolicy();
  auto r = BySubject(RunRegisteredCheck("hugepages_free", CollectFixture(config), config));
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r["mlx5_0"].check, "hugepages_free");
  EXPECT_EQ(r["mlx5_0"].verdict, Verdict::kOk);
  EXPECT_EQ(r["mlx5_1"].verdict, Verdict::kFailed);
  EXPECT_EQ(r["mlx5_1"].fix, "echo 680 > /sys/devices/system/node/node1/hugepages/hugepages-2048kB/nr_hugepages");
  EXPECT_EQ(r["mlx5_2"].verdict, Verdict::kOk);  // numa_node -1: system-wide, and says so
  EXPECT_THAT(r["mlx5_2"].reason, HasSubstr("numa_node -1"));
}

TEST(HostMemoryChecksTest, WorkloadNumaAndMemlockOnTheFixture) {
  const Config config = FixturePolicy();
  const Snapshot snapshot = CollectFixture(config);
  auto numa = BySubject(RunRegisteredCheck("workload_numa", snapshot, config));
  EXPECT_EQ(numa["trainer"].verdict, Verdict::kFailed);
  EXPECT_EQ(numa["nvmet"].verdict, Verdict::kOk);
  EXPECT_EQ(numa["stopped"].verdict, Verdict::kUnknown);
  // The daemon registers no memory of its own under this config: it is not a subject.
  EXPECT_FALSE(BySubject(RunRegisteredCheck("memlock", snapshot, config)).contains("rdma-healthd"));
  Config responding = config;
  responding.Section<PeersPolicy>().responder.enabled = true;
  auto memlock = BySubject(RunRegisteredCheck("memlock", snapshot, responding));
  EXPECT_EQ(memlock["rdma-healthd"].verdict, Verdict::kFailed);
  EXPECT_EQ(memlock["trainer"].verdict, Verdict::kOk);
  EXPECT_EQ(memlock["nvmet"].verdict, Verdict::kFailed);
  EXPECT_EQ(memlock["stopped"].verdict, Verdict::kUnknown);
}

// Collectors disabled: unknown with the reason, never ok or failed.
TEST(HostMemoryChecksTest, MissingFactsAreUnknown) {
  const Config config = FixturePolicy();
  Snapshot snapshot;
  NodeFs fs(testing::ProjectFixture("host/numa-misplaced/sys"), "/nonexistent");
  snapshot.Put(testing::DiscoverTopology(fs, config));
  for (const char* check : {"hugepages_free", "workload_numa", "memlock"}) {
    auto results = RunRegisteredCheck(check, snapshot, config);
    EXPECT_FALSE(results.empty()) << check;
    for (const auto& r : results) {
      EXPECT_EQ(r.verdict, Verdict::kUnknown) << check << " " << r.subject;
      EXPECT_THAT(r.reason, HasSubstr("collector is disabled or failed"));
    }
  }
}

}  // namespace
}  // namespace rdmahd
