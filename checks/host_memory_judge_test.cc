#include "checks/host_memory_judge.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace rdmahd {
namespace {

using ::testing::HasSubstr;

constexpr std::uint64_t k2M = 2u << 20;

HostMemoryFacts TwoNodeHugepages() {
  HostMemoryFacts f;
  f.default_hugepage_size_bytes = k2M;
  HugepageSizeFacts s;
  s.size_bytes = k2M;
  s.system = {1024, 600, 0, 0};
  s.nodes[0] = {512, 512, std::nullopt, 0};
  s.nodes[1] = {512, 88, std::nullopt, 0};
  f.hugepage_sizes.push_back(s);
  return f;
}

HugepagesPolicy Need(std::uint64_t pages) { return HugepagesPolicy{std::nullopt, pages}; }

TEST(HugepagesFreeJudgeTest, OkAndFailedPerDeviceNode) {
  const HostMemoryFacts f = TwoNodeHugepages();
  auto r = JudgeHugepagesFree(&f, {{"mlx5_0", 0}, {"mlx5_1", 1}}, Need(256));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].subject, "mlx5_0");
  EXPECT_EQ(r[0].verdict, Verdict::kOk);
  EXPECT_EQ(r[0].reason, "512 free 2 MiB hugepages on node 0 (total 512, surplus 0) >= 256");
  EXPECT_EQ(r[1].verdict, Verdict::kFailed);
  EXPECT_THAT(r[1].reason, HasSubstr("only 88 free 2 MiB hugepages on node 1 (total 512, surplus 0), need 256"));
  // 512 + (256 - 88)
  EXPECT_EQ(r[1].fix, "echo 680 > /sys/devices/system/node/node1/hugepages/hugepages-2048kB/nr_hugepages");
}

TEST(HugepagesFreeJudgeTest, UnknownNodeIsJudgedSystemWideAndSaysSo) {
  const HostMemoryFacts f = TwoNodeHugepages();
  auto r = JudgeHugepagesFree(&f, {{"rxe0", -1}, {"mlx5_9", std::nullopt}}, Need(1000));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].verdict, Verdict::kFailed);
  EXPECT_THAT(r[0].reason, HasSubstr("NUMA node of rxe0 unknown (numa_node -1), judged system-wide: only 600 free"));
  EXPECT_EQ(r[0].fix, "echo 1424 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages");
  EXPECT_THAT(r[1].reason, HasSubstr("numa_node unreadable"));
  // Reserved pages are promised to mappings already: not available system-wide.
  HostMemoryFacts reserved = f;
  reserved.hugepage_sizes[0].system.reserved = 100;
  auto rs = JudgeHugepagesFree(&reserved, {{"rxe0", -1}}, Need(600));
  EXPECT_EQ(rs[0].verdict, Verdict::kFailed);
  EXPECT_THAT(rs[0].reason, HasSubstr("only 600 free (100 of them reserved) 2 MiB hugepages system-wide"));
  EXPECT_EQ(rs[0].fix, "echo 1124 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages");
  auto ok = JudgeHugepagesFree(&f, {{"rxe0", -1}}, Need(600));
  EXPECT_EQ(ok[0].verdict, Verdict::kOk);
  EXPECT_THAT(ok[0].reason, HasSubstr("judged system-wide: 600 free"));
}

TEST(HugepagesFreeJudgeTest, UnknownCases) {
  const HostMemoryFacts f = TwoNodeHugepages();
  auto not_configured = JudgeHugepagesFree(&f, {{"mlx5_0", 0}}, HugepagesPolicy{});
  EXPECT_EQ(not_configured[0].verdict, Verdict::kUnknown);
  EXPECT_EQ(not_configured[0].reason, "not configured (host.hugepages.min_free)");
  EXPECT_EQ(JudgeHugepagesFree(nullptr, {{"mlx5_0", 0}}, Need(1))[0].verdict, Verdict::kUnknown);
  // The node has no per-node folder (node 3 not in the facts).
  auto r = JudgeHugepagesFree(&f, {{"mlx5_0", 3}}, Need(1));
  EXPECT_EQ(r[0].verdict, Verdict::kUnknown);
  EXPECT_THAT(r[0].reason, HasSubstr("no per-node 2 MiB hugepages counts for node 3"));
  // A free count that could not be read.
  HostMemoryFacts unread = f;
  unread.hugepage_sizes[0].nodes[0].free.reset();
  EXPECT_EQ(JudgeHugepagesFree(&unread, {{"mlx5_0", 0}}, Need(1))[0].verdict, Verdict::kUnknown);
  // No default size and none configured.
  HostMemoryFacts no_default = f;
  no_default.default_hugepage_size_bytes.reset();
  no_default.meminfo_note = "open /proc/meminfo: Permission denied";
  auto nd = JudgeHugepagesFree(&no_default, {{"mlx5_0", 0}}, Need(1));
  EXPECT_EQ(nd[0].verdict, Verdict::kUnknown);
  EXPECT_THAT(nd[0].reason, HasSubstr("Permission denied"));
  // No hugetlb pools at all (folder unreadable).
  HostMemoryFacts none;
  none.default_hugepage_size_bytes = k2M;
  none.hugepages_note = "no /sys/kernel/mm/hugepages";
  EXPECT_EQ(JudgeHugepagesFree(&none, {{"mlx5_0", 0}}, Need(1))[0].verdict, Verdict::kUnknown);
}

TEST(HugepagesFreeJudgeTest, MissingPoolSizeFails) {
  const HostMemoryFacts f = TwoNodeHugepages();
  auto r = JudgeHugepagesFree(&f, {{"mlx5_0", 0}}, HugepagesPolicy{1u << 30, 8});
  EXPECT_EQ(r[0].verdict, Verdict::kFailed);
  EXPECT_EQ(r[0].reason, "the kernel has no 1 GiB hugepage pool (pools: 2 MiB)");
  EXPECT_EQ(r[0].fix, "boot with hugepagesz=1048576K hugepages=8 on the kernel command line");
}

// ---- workload_numa ----------------------------------------------------------------------------------

WorkloadsFacts TwoNodeWorkload(const std::string& cpus, std::map<int, std::uint64_t> memory) {
  WorkloadsFacts f;
  f.node_cpus[0] = *ParseCpuList("0-15");
  f.node_cpus[1] = *ParseCpuList("16-31");
  f.node_cpus[2] = CpuList();  // memory-only node
  WorkloadFacts w;
  w.name = "trainer";
  w.looked_up = true;
  WorkloadProcessFacts p;
  p.pid = 4242;
  p.comm = "python3";
  p.cpus_allowed = *ParseCpuList(cpus);
  p.memory_bytes_by_node = std::move(memory);
  w.processes.push_back(p);
  f.workloads.push_back(w);
  return f;
}

HostMemoryPolicy OneWorkload(std::optional<std::string> device = "mlx5_1", std::string unit = "") {
  HostMemoryPolicy p;
  WorkloadSpec w;
  w.name = "trainer";
  if (unit.empty()) w.process = "python3";
  else w.systemd_unit = unit;
  w.device = std::move(device);
  p.workloads.push_back(w);
  return p;
}

const std::vector<DevicePlacement> kDevices = {{"mlx5_0", 0}, {"mlx5_1", 1}};

TEST(WorkloadNumaJudgeTest, AllLocalIsOk) {
  auto f = TwoNodeWorkload("16-31", {{1, 900u << 20}, {0, 100u << 20}});
  auto r = JudgeWorkloadNuma(&f, kDevices, OneWorkload());
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].verdict, Verdict::kOk) << r[0].reason;
  EXPECT_EQ(r[0].reason,
            "16 of 16 allowed CPUs (16-31) on node 1 (mlx5_1); memory 900 MiB of 1000 MiB (90%) on node 1 (mlx5_1), "
            "need 90% (pids 4242)");
  EXPECT_TRUE(r[0].fix.empty());
}

TEST(WorkloadNumaJudgeTest, PartialIsWarningNoneIsFailed) {
  auto partial = TwoNodeWorkload("0-31", {{1, 1u << 30}});
  auto r = JudgeWorkloadNuma(&partial, kDevices, OneWorkload());
  EXPECT_EQ(r[0].verdict, Verdict::kWarning);
  EXPECT_THAT(r[0].reason, HasSubstr("16 of 32 allowed CPUs (0-31) on node 1"));
  EXPECT_EQ(r[0].fix, "restart it under numactl --cpunodebind=1 --membind=1 <command>");

  auto remote = TwoNodeWorkload("0-15", {{0, 1u << 30}});
  auto f = JudgeWorkloadNuma(&remote, kDevices, OneWorkload());
  EXPECT_EQ(f[0].verdict, Verdict::kFailed);
  EXPECT_THAT(f[0].reason, HasSubstr("memory 0 bytes of 1 GiB (0%) on node 1"));

  // Memory partly remote with CPUs local: warning, and a unit gets a unit fix.
  auto mem = TwoNodeWorkload("16-31", {{0, 1u << 30}, {1, 1u << 30}});
  auto m = JudgeWorkloadNuma(&mem, kDevices, OneWorkload("mlx5_1", "trainer.service"));
  EXPECT_EQ(m[0].verdict, Verdict::kWarning);
  EXPECT_EQ(m[0].fix,
            "systemctl edit trainer.service ([Service] CPUAffinity=16-31 NUMAPolicy=bind NUMAMask=1), then "
            "systemctl restart trainer.service");
}

TEST(WorkloadNumaJudgeTest, WithoutADeviceAnyRdmaNodeCounts) {
  auto f = TwoNodeWorkload("0-31", {{0, 1u << 20}, {1, 1u << 20}});
  auto r = JudgeWorkloadNuma(&f, kDevices, OneWorkload(std::nullopt));
  EXPECT_EQ(r[0].verdict, Verdict::kOk) << r[0].reason;
  EXPECT_THAT(r[0].reason, HasSubstr("on node 0,1 (mlx5_0,mlx5_1)"));
}

TEST(WorkloadNumaJudgeTest, UnknownCases) {
  auto f = TwoNodeWorkload("16-31", {{1, 1u << 20}});
  // Not running.
  WorkloadsFacts stopped = f;
  stopped.workloads[0].processes.clear();
  auto r = JudgeWorkloadNuma(&stopped, kDevices, OneWorkload());
  EXPECT_EQ(r[0].verdict, Verdict::kUnknown);
  EXPECT_THAT(r[0].reason, HasSubstr("not running: no process found by process name python3"));
  // Lookup failed.
  WorkloadsFacts unreadable = f;
  unreadable.workloads[0].looked_up = false;
  unreadable.workloads[0].note = "read /run/x.pid: Permission denied";
  EXPECT_THAT(JudgeWorkloadNuma(&unreadable, kDevices, OneWorkload())[0].reason, HasSubstr("Permission denied"));
  // NIC without NUMA affinity.
  auto n = JudgeWorkloadNuma(&f, {{"mlx5_1", -1}}, OneWorkload());
  EXPECT_EQ(n[0].verdict, Verdict::kUnknown);
  EXPECT_THAT(n[0].reason, HasSubstr("mlx5_1 numa_node -1"));
  // Device not present.
  EXPECT_THAT(JudgeWorkloadNuma(&f, {{"mlx5_0", 0}}, OneWorkload())[0].reason, HasSubstr("mlx5_1 not found"));
  // Facts missing.
  EXPECT_EQ(JudgeWorkloadNuma(nullptr, kDevices, OneWorkload())[0].verdict, Verdict::kUnknown);
  // CPUs ok but memory unreadable (another user's process): unknown, never ok.
  WorkloadsFacts eacces = f;
  eacces.workloads[0].processes[0].memory_bytes_by_node.reset();
  eacces.workloads[0].processes[0].memory_note = "open /proc/4242/numa_maps: Permission denied";
  auto e = JudgeWorkloadNuma(&eacces, kDevices, OneWorkload());
  EXPECT_EQ(e[0].verdict, Verdict::kUnknown);
  EXPECT_THAT(e[0].reason, HasSubstr("memory placement unknown (pid 4242: open /proc/4242/numa_maps: Permission denied)"));
  // ... but CPUs all remote is a failure even with memory unknown.
  WorkloadsFacts remote = eacces;
  remote.workloads[0].processes[0].cpus_allowed = *ParseCpuList("0-15");
  EXPECT_EQ(JudgeWorkloadNuma(&remote, kDevices, OneWorkload())[0].verdict, Verdict::kFailed);
}

TEST(WorkloadNumaJudgeTest, SingleNodeHostIsOk) {
  WorkloadsFacts f = TwoNodeWorkload("0-3", {{0, 1u << 20}});
  f.node_cpus = {{0, *ParseCpuList("0-3")}};
  auto r = JudgeWorkloadNuma(&f, {{"mlx5_0", 0}}, OneWorkload("mlx5_0"));
  EXPECT_EQ(r[0].verdict, Verdict::kOk);
  EXPECT_EQ(r[0].reason, "single NUMA node (node 0): CPUs and memory are local to mlx5_0");
  // Even when the NIC reports no NUMA affinity (-1), as single-socket hosts and rxe do.
  auto no_affinity = JudgeWorkloadNuma(&f, {{"rxe0", -1}}, OneWorkload("rxe0"));
  EXPECT_EQ(no_affinity[0].verdict, Verdict::kOk);
}

// ---- memlock ----------------------------------------------------------------------------------------

WorkloadsFacts WithLimits(std::optional<MemlockLimit> daemon, std::vector<std::optional<MemlockLimit>> procs) {
  WorkloadsFacts f;
  f.daemon_memlock = daemon;
  if (!daemon) f.daemon_memlock_note = "open /proc/self/limits: No such file or directory";
  WorkloadFacts w;
  w.name = "trainer";
  w.looked_up = true;
  int pid = 100;
  for (auto& l : procs) {
    WorkloadProcessFacts p;
    p.pid = pid++;
    p.comm = "python3";
    p.memlock = l;
    if (!l) p.memlock_note = "open /proc/" + std::to_string(p.pid) + "/limits: Permission denied";
    w.processes.push_back(p);
  }
  f.workloads.push_back(w);
  return f;
}

const MemlockLimit kUnlimited{{true, 0}, {true, 0}};
const MemlockLimit k64K{{false, 65536}, {false, 65536}};
const MemlockLimit kNearMax{{false, 18446744073708503040u}, {false, 18446744073708503040u}};

TEST(MemlockJudgeTest, DaemonAndWorkloads) {
  auto f = WithLimits(kUnlimited, {kNearMax, k64K});
  auto r = JudgeMemlock(&f, OneWorkload());
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].subject, "rdma-healthd");
  EXPECT_EQ(r[0].verdict, Verdict::kOk);
  EXPECT_EQ(r[0].reason, "locked-memory limit soft unlimited, hard unlimited, need unlimited or >= 64 MiB");
  EXPECT_EQ(r[1].subject, "trainer");
  EXPECT_EQ(r[1].verdict, Verdict::kFailed);
  EXPECT_THAT(r[1].reason, HasSubstr("pid 101 (python3) locked-memory limit soft 64 KiB, hard 64 KiB, need unlimited or >= 64 MiB"));
  EXPECT_THAT(r[1].fix, HasSubstr("prlimit --pid 101 --memlock=unlimited:unlimited"));
  EXPECT_THAT(r[1].fix, HasSubstr("/etc/security/limits.d/"));

  auto unit = JudgeMemlock(&f, OneWorkload("mlx5_1", "trainer.service"));
  EXPECT_EQ(unit[1].fix, "systemctl edit trainer.service ([Service] LimitMEMLOCK=infinity), then systemctl restart trainer.service");
}

// Without peer probes or a responder the daemon pins nothing: a shell's 8 MiB under `rdma-healthd
// check` is no failure, and the daemon is not a subject at all.
TEST(MemlockJudgeTest, DaemonIsJudgedOnlyWhenItRegistersMemory) {
  const MemlockLimit k8M{{false, 8u << 20}, {false, 8u << 20}};
  auto f = WithLimits(k8M, {kUnlimited});
  auto with = JudgeMemlock(&f, OneWorkload(), /*daemon_registers_memory=*/true);
  ASSERT_EQ(with.size(), 2u);
  EXPECT_EQ(with[0].verdict, Verdict::kFailed);
  auto without = JudgeMemlock(&f, OneWorkload(), /*daemon_registers_memory=*/false);
  ASSERT_EQ(without.size(), 1u);
  EXPECT_EQ(without[0].subject, "trainer");
  EXPECT_EQ(without[0].verdict, Verdict::kOk);
}

TEST(MemlockJudgeTest, NearMaxNumberPassesUnlessUnlimitedIsRequired) {
  auto f = WithLimits(kNearMax, {kNearMax});
  auto r = JudgeMemlock(&f, OneWorkload());
  EXPECT_EQ(r[0].verdict, Verdict::kOk);
  EXPECT_EQ(r[1].verdict, Verdict::kOk);
  HostMemoryPolicy strict = OneWorkload();
  strict.memlock.require_unlimited = true;
  auto s = JudgeMemlock(&f, strict);
  EXPECT_EQ(s[0].verdict, Verdict::kFailed);
  EXPECT_THAT(s[0].reason, HasSubstr("need unlimited:"));
  EXPECT_THAT(s[0].fix, HasSubstr("LimitMEMLOCK=infinity"));
}

// The kernel does not hold pinned memory against the limit of a process with CAP_IPC_LOCK (root,
// or the shipped unit's AmbientCapabilities).
TEST(MemlockJudgeTest, CapIpcLockLiftsTheLimit) {
  auto f = WithLimits(k64K, {k64K});
  f.daemon_cap_ipc_lock = true;
  f.workloads[0].processes[0].cap_ipc_lock = true;
  auto r = JudgeMemlock(&f, OneWorkload());
  EXPECT_EQ(r[0].verdict, Verdict::kOk);
  EXPECT_THAT(r[0].reason, HasSubstr("CAP_IPC_LOCK lifts it"));
  EXPECT_EQ(r[1].verdict, Verdict::kOk);
  EXPECT_THAT(r[1].reason, HasSubstr("CAP_IPC_LOCK lifts it for pids 100"));
  f.workloads[0].processes[0].cap_ipc_lock = false;
  EXPECT_EQ(JudgeMemlock(&f, OneWorkload())[1].verdict, Verdict::kFailed);
}

TEST(MemlockJudgeTest, UnknownIsNeverOkOrFailed) {
  auto f = WithLimits(std::nullopt, {kUnlimited, std::nullopt});
  auto r = JudgeMemlock(&f, OneWorkload());
  EXPECT_EQ(r[0].verdict, Verdict::kUnknown);
  EXPECT_THAT(r[0].reason, HasSubstr("No such file"));
  EXPECT_EQ(r[1].verdict, Verdict::kUnknown);
  EXPECT_THAT(r[1].reason, HasSubstr("pid 101: open /proc/101/limits: Permission denied"));
  // A known failing process still fails next to an unreadable one.
  auto g = WithLimits(kUnlimited, {k64K, std::nullopt});
  EXPECT_EQ(JudgeMemlock(&g, OneWorkload())[1].verdict, Verdict::kFailed);
  // Not running.
  auto stopped = WithLimits(kUnlimited, {});
  EXPECT_EQ(JudgeMemlock(&stopped, OneWorkload())[1].verdict, Verdict::kUnknown);
  // Collector missing.
  auto none = JudgeMemlock(nullptr, OneWorkload());
  ASSERT_EQ(none.size(), 2u);
  EXPECT_EQ(none[0].verdict, Verdict::kUnknown);
  EXPECT_EQ(none[1].verdict, Verdict::kUnknown);
}

TEST(HumanBytesTest, Units) {
  EXPECT_EQ(HumanBytes(0), "0 bytes");
  EXPECT_EQ(HumanBytes(65536), "64 KiB");
  EXPECT_EQ(HumanBytes(2u << 20), "2 MiB");
  EXPECT_EQ(HumanBytes(3u << 29), "1.5 GiB");
  EXPECT_EQ(HumanBytes(18446744073708503040u), "16.0 EiB");
}

}  // namespace
}  // namespace rdmahd
