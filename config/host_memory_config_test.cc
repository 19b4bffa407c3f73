// The host memory keys of the config (host.hugepages, host.memlock, host.workload_numa,
// host.workloads): values, defaults and the messages for the usual slips.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/config.h"
#include "tests/support/test_paths.h"

namespace rdmahd {
namespace {

using ::testing::HasSubstr;

Result<Config> Parse(const std::string& yaml) { return ParseConfig(yaml, "t.yaml", PluginNames(std::vector<std::string>{"hugepages", "workloads"})); }

std::string ErrorOf(const std::string& yaml) {
  Result<Config> r = Parse(yaml);
  EXPECT_FALSE(r.ok()) << "parsed, but should have failed:\n" << yaml;
  return r.ok() ? "" : r.error().message;
}

TEST(HostMemoryConfigTest, Defaults) {
  Result<Config> r = Parse("host: {}\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->Section<HugepagesPolicy>().page_size_bytes);
  EXPECT_FALSE(r->Section<HugepagesPolicy>().min_free);
  EXPECT_FALSE(r->Section<MemlockPolicy>().require_unlimited);
  EXPECT_EQ(r->Section<MemlockPolicy>().min_bytes, 64u << 20);
  EXPECT_DOUBLE_EQ(r->Section<WorkloadNumaPolicy>().min_local_memory_share, 0.9);
  EXPECT_TRUE(r->Section<WorkloadsPolicy>().workloads.empty());
}

TEST(HostMemoryConfigTest, FullSection) {
  Result<Config> r = Parse(
      "host:\n"
      "  hugepages: {page_size: 1GiB, min_free: 8}\n"
      "  memlock: {min_bytes: 2GiB}\n"
      "  workload_numa: {min_local_memory_share: 0.75}\n"
      "  workloads:\n"
      "    - {name: trainer, process: python3, device: mlx5_0}\n"
      "    - {name: storage, pid_file: /run/spdk.pid}\n"
      "    - {name: nvmet, systemd_unit: nvmet-rdma.service}\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->Section<HugepagesPolicy>().page_size_bytes, 1u << 30);
  EXPECT_EQ(r->Section<HugepagesPolicy>().min_free, 8u);
  EXPECT_EQ(r->Section<MemlockPolicy>().min_bytes, 2ull << 30);
  EXPECT_DOUBLE_EQ(r->Section<WorkloadNumaPolicy>().min_local_memory_share, 0.75);
  ASSERT_EQ(r->Section<WorkloadsPolicy>().workloads.size(), 3u);
  EXPECT_EQ(r->Section<WorkloadsPolicy>().workloads[0].process, "python3");
  EXPECT_EQ(r->Section<WorkloadsPolicy>().workloads[0].device, "mlx5_0");
  EXPECT_EQ(r->Section<WorkloadsPolicy>().workloads[1].pid_file, "/run/spdk.pid");
  EXPECT_FALSE(r->Section<WorkloadsPolicy>().workloads[1].device);
  EXPECT_EQ(r->Section<WorkloadsPolicy>().workloads[2].systemd_unit, "nvmet-rdma.service");
}

TEST(HostMemoryConfigTest, SizesInBytesAndUnits) {
  EXPECT_EQ(Parse("host: {hugepages: {page_size: 2048kB}}")->Section<HugepagesPolicy>().page_size_bytes, 2u << 20);
  EXPECT_EQ(Parse("host: {hugepages: {page_size: 2097152}}")->Section<HugepagesPolicy>().page_size_bytes, 2u << 20);
  EXPECT_EQ(Parse("host: {memlock: {min_bytes: 65536}}")->Section<MemlockPolicy>().min_bytes, 65536u);
  EXPECT_TRUE(Parse("host: {memlock: {min_bytes: unlimited}}")->Section<MemlockPolicy>().require_unlimited);
  EXPECT_THAT(ErrorOf("host: {hugepages: {page_size: 3MiB}}"), HasSubstr("must be a hugepage size"));
  EXPECT_THAT(ErrorOf("host: {hugepages: {page_size: 4kB}}"), HasSubstr("must be a hugepage size"));
  EXPECT_THAT(ErrorOf("host: {hugepages: {page_size: 2MB}}"), HasSubstr("must be a size in bytes"));
  EXPECT_THAT(ErrorOf("host: {memlock: {min_bytes: 99999999999TiB}}"), HasSubstr("must be a size in bytes"));
  EXPECT_THAT(ErrorOf("host: {memlock: {min_bytes: infinity}}"), HasSubstr("or \"unlimited\""));
  EXPECT_THAT(ErrorOf("host: {hugepages: {min_free: 0}}"), HasSubstr("positive integer"));
  EXPECT_THAT(ErrorOf("host: {workload_numa: {min_local_memory_share: 90}}"), HasSubstr("at most 1"));
}

TEST(HostMemoryConfigTest, WorkloadMistakesAreExplained) {
  EXPECT_EQ(ErrorOf("host:\n  workloads:\n    - {name: a, process: x, pid_file: /run/x.pid}\n"),
            "t.yaml:3:7: host.workloads[0]: workload \"a\" needs exactly one of process, pid_file, systemd_unit");
  EXPECT_THAT(ErrorOf("host: {workloads: [{process: x}]}"), HasSubstr("needs a name"));
  EXPECT_THAT(ErrorOf("host: {workloads: [{name: a, process: x}, {name: a, process: y}]}"),
              HasSubstr("duplicate workload name \"a\""));
  EXPECT_THAT(ErrorOf("host: {workloads: [{name: \"a b\", process: x}]}"), HasSubstr("label value"));
  EXPECT_THAT(ErrorOf("host: {workloads: [{name: a, process: very_long_process_name}]}"),
              HasSubstr("use \"very_long_proce\""));
  EXPECT_THAT(ErrorOf("host: {workloads: [{name: a, process: /usr/bin/ib_write_bw}]}"),
              HasSubstr("e.g. \"ib_write_bw\""));
  EXPECT_THAT(ErrorOf("host: {workloads: [{name: a, pid_file: run/x.pid}]}"), HasSubstr("absolute path"));
  EXPECT_THAT(ErrorOf("host: {workloads: [{name: a, systemd_unit: trainer}]}"), HasSubstr("trainer.service"));
  EXPECT_THAT(ErrorOf("host: {workloads: [{name: a, process: x, cpus: 3}]}"), HasSubstr("unknown key \"cpus\""));
  EXPECT_THAT(ErrorOf("host: {workloads: {name: a}}"), HasSubstr("must be a list of workloads"));
  EXPECT_THAT(ErrorOf("host: {hugepage: {}}"), HasSubstr("did you mean \"hugepages\""));
  std::string many = "host:\n  workloads:\n";
  for (int i = 0; i < 33; ++i) many += "    - {name: w" + std::to_string(i) + ", process: p}\n";
  EXPECT_THAT(ErrorOf(many), HasSubstr("at most 32 workloads"));
}

// example.yaml states the built-in host memory defaults.
TEST(HostMemoryConfigTest, ExampleYamlStatesTheDefaults) {
  Result<Config> r = LoadConfigFile(testing::SourceDir() + "/config/example.yaml", PluginNames(std::vector<std::string>{"hugepages", "workloads", "devices",
                                                                                   "ports", "roce", "netdev", "verbs"}));
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Config d;
  EXPECT_EQ(r->Section<HugepagesPolicy>().page_size_bytes, d.Section<HugepagesPolicy>().page_size_bytes);
  EXPECT_EQ(r->Section<HugepagesPolicy>().min_free, d.Section<HugepagesPolicy>().min_free);
  EXPECT_EQ(r->Section<MemlockPolicy>().min_bytes, d.Section<MemlockPolicy>().min_bytes);
  EXPECT_EQ(r->Section<MemlockPolicy>().require_unlimited, d.Section<MemlockPolicy>().require_unlimited);
  EXPECT_DOUBLE_EQ(r->Section<WorkloadNumaPolicy>().min_local_memory_share, d.Section<WorkloadNumaPolicy>().min_local_memory_share);
  EXPECT_TRUE(r->Section<WorkloadsPolicy>().workloads.empty());
}

}  // namespace
}  // namespace rdmahd
