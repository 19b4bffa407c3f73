#include "collectors/workloads.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <filesystem>
#include <unistd.h>

#include "tests/support/test_paths.h"

namespace rdmahd {
namespace {

using testing::ProjectFixture;
using testing::TempDir;

const std::string kFixture = "host/numa-misplaced";

WorkloadSpec ByName(const std::string& name, const std::string& comm) {
  WorkloadSpec w;
  w.name = name;
  w.process = comm;
  return w;
}
WorkloadSpec ByUnit(const std::string& name, const std::string& unit) {
  WorkloadSpec w;
  w.name = name;
  w.systemd_unit = unit;
  return w;
}
WorkloadSpec ByPidFile(const std::string& name, const std::string& path) {
  WorkloadSpec w;
  w.name = name;
  w.pid_file = path;
  return w;
}

struct Collected {
  WorkloadsFacts facts;
  std::vector<std::string> errors;
  std::string text;
};

Collected CollectWorkloads(const NodeFs& fs, std::vector<WorkloadSpec> specs,
              WorkloadsCollector::MemlockSource own = OwnMemlockLimit) {
  WorkloadsCollector collector(std::move(own));
  Config config;
  Topology topology;
  config.Section<WorkloadsPolicy>().workloads = std::move(specs);
  Snapshot snapshot;
  CollectorOutcome outcome;
  EXPECT_TRUE(collector.Collect(CollectContext{fs, config, topology}, snapshot, outcome).ok());
  Collected out;
  if (const auto* f = snapshot.Get<WorkloadsFacts>()) out.facts = *f;
  out.errors = outcome.errors;
  MetricSink sink;
  collector.Render(snapshot, sink);
  out.text = sink.Serialize();
  return out;
}

NodeFs HostFixture() { return NodeFs(ProjectFixture(kFixture + "/sys"), ProjectFixture(kFixture + "/proc")); }

TEST(WorkloadsCollectorTest, FindsWorkloadsByNameAndUnit) {
  Collected c = CollectWorkloads(HostFixture(), {ByName("trainer", "python3"), ByUnit("nvmet", "nvmet-rdma.service")});
  EXPECT_TRUE(c.errors.empty()) << c.errors.front();
  ASSERT_EQ(c.facts.workloads.size(), 2u);
  const WorkloadFacts& t = c.facts.workloads[0];
  EXPECT_TRUE(t.looked_up);
  ASSERT_EQ(t.processes.size(), 1u);
  const WorkloadProcessFacts& p = t.processes[0];
  EXPECT_EQ(p.pid, 2001);
  EXPECT_EQ(p.comm, "python3");
  ASSERT_TRUE(p.cpus_allowed);
  EXPECT_EQ(p.cpus_allowed->ToString(), "0-15");
  ASSERT_TRUE(p.memory_bytes_by_node);
  EXPECT_EQ(p.memory_bytes_by_node->at(0), (700u + 240000 + 33) * 4096 + 64u * (2u << 20));
  EXPECT_EQ(p.memory_bytes_by_node->at(1), 22144u * 4096);
  ASSERT_TRUE(p.memlock);
  EXPECT_TRUE(p.memlock->soft.unlimited);
  EXPECT_EQ(p.cap_ipc_lock, false);

  const WorkloadFacts& n = c.facts.workloads[1];
  ASSERT_EQ(n.processes.size(), 1u);
  EXPECT_EQ(n.processes[0].pid, 3001);
  EXPECT_EQ(n.processes[0].memlock->soft, (LimitValue{false, 65536}));

  ASSERT_EQ(c.facts.node_cpus.size(), 2u);
  EXPECT_EQ(c.facts.node_cpus.at(1).ToString(), "16-31");
  // A capture: the daemon's limit is the capture's self/limits.
  ASSERT_TRUE(c.facts.daemon_memlock);
  EXPECT_EQ(c.facts.daemon_memlock->soft, (LimitValue{false, 65536}));
  EXPECT_EQ(c.facts.daemon_cap_ipc_lock, false);
}

TEST(WorkloadsCollectorTest, Metrics) {
  Collected c = CollectWorkloads(HostFixture(), {ByName("trainer", "python3"), ByUnit("gone", "nothere.service")});
  for (const char* line : {
           "rdma_healthd_memlock_limit_bytes 65536\n",
           "rdma_workload_up{workload=\"trainer\"} 1\n",
           "rdma_workload_up{workload=\"gone\"} 0\n",
           "rdma_workload_processes{workload=\"trainer\"} 1\n",
           "rdma_workload_allowed_cpus{workload=\"trainer\",node=\"0\"} 16\n",
           "rdma_workload_allowed_cpus{workload=\"trainer\",node=\"1\"} 0\n",
           "rdma_workload_memory_bytes{workload=\"trainer\",node=\"1\"} 90701824\n",
           "rdma_workload_memlock_limit_bytes{workload=\"trainer\"} +Inf\n",
       }) {
    EXPECT_NE(c.text.find(line), std::string::npos) << line << "\nin:\n" << c.text;
  }
  EXPECT_EQ(c.text.find("rdma_workload_memory_bytes{workload=\"gone\""), std::string::npos);
}

TEST(WorkloadsCollectorTest, NotRunningIsKnownAbsence) {
  Collected c = CollectWorkloads(HostFixture(), {ByName("w", "nosuchproc"), ByUnit("u", "stopped.service"),
                                    ByPidFile("p", "/nonexistent/rdmahd-test/x.pid")});
  for (const auto& w : c.facts.workloads) {
    SCOPED_TRACE(w.name);
    EXPECT_TRUE(w.looked_up);
    EXPECT_TRUE(w.processes.empty());
  }
  EXPECT_NE(c.facts.workloads[1].note.find("unit not running"), std::string::npos) << c.facts.workloads[1].note;
  EXPECT_TRUE(c.errors.empty());
}

TEST(WorkloadsCollectorTest, PidFiles) {
  TempDir dir;
  dir.Write("good.pid", "3001\n");
  dir.Write("stale.pid", "4000000\n");
  dir.Write("garbage.pid", "root:$6$salt$hash:19000:0:99999:7:::\n");  // e.g. /etc/shadow named as a pid file
  dir.MkDir("dir.pid");
  Collected c = CollectWorkloads(HostFixture(), {ByPidFile("good", dir.path() + "/good.pid"), ByPidFile("stale", dir.path() + "/stale.pid"),
                                    ByPidFile("garbage", dir.path() + "/garbage.pid"),
                                    ByPidFile("dir", dir.path() + "/dir.pid")});
  ASSERT_EQ(c.facts.workloads.size(), 4u);
  ASSERT_EQ(c.facts.workloads[0].processes.size(), 1u);
  EXPECT_EQ(c.facts.workloads[0].processes[0].comm, "nvmet-helper");
  EXPECT_TRUE(c.facts.workloads[1].looked_up);
  EXPECT_TRUE(c.facts.workloads[1].processes.empty());
  EXPECT_NE(c.facts.workloads[1].note.find("stale pid file"), std::string::npos);
  EXPECT_FALSE(c.facts.workloads[2].looked_up);  // unknown, not "not running"
  EXPECT_NE(c.facts.workloads[2].note.find("not a pid"), std::string::npos);
  EXPECT_EQ(c.facts.workloads[2].note.find("root:"), std::string::npos) << c.facts.workloads[2].note;  // never echoed
  EXPECT_FALSE(c.facts.workloads[3].looked_up);
  EXPECT_EQ(c.errors.size(), 2u);
  // Unknown workloads have no samples at all.
  EXPECT_EQ(c.text.find("workload=\"garbage\""), std::string::npos);
}

// A process that exits between the listing and its reads is dropped; one whose numa_maps is
// unreadable keeps the rest with the reason; malformed files cost their value.
TEST(WorkloadsCollectorTest, VanishingUnreadableAndMalformedProcesses) {
  TempDir dir;
  namespace fs = std::filesystem;
  fs::copy(ProjectFixture(kFixture + "/sys"), dir.path() + "/sys", fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  dir.Write("sys/fs/cgroup/system.slice/app.service/cgroup.procs", "10\n11\n12\n13\n14\n");
  // 14: a zombie (exited, not yet reaped).
  dir.Write("proc/14/status", "Name:\tapp\nState:\tZ (zombie)\nCpus_allowed_list:\t0-3\n");
  dir.Write("proc/14/numa_maps", "");
  dir.Write("proc/14/limits", "Max locked memory         unlimited            unlimited            bytes\n");
  // 10: exited after the listing (no /proc/10). 11: exited mid-read (status, no limits).
  dir.Write("proc/11/status", "Name:\tapp\nCpus_allowed_list:\t0-3\n");
  dir.Write("proc/11/numa_maps", "7f00 default N0=1 kernelpagesize_kB=4\n");
  // 12: another user's process: numa_maps unreadable (a directory stands in for EACCES, which
  // root would not get), malformed limits.
  dir.Write("proc/12/status", "Name:\tapp\nCpus_allowed_list:\t16-17\n");
  dir.MkDir("proc/12/numa_maps");
  dir.Write("proc/12/limits", "Max locked memory         lots                 65536                bytes\n");
  // 13: complete, but a cpulist the kernel would never print.
  dir.Write("proc/13/status", "Name:\tapp\nCpus_allowed_list:\t3-1\n");
  dir.Write("proc/13/numa_maps", "7f00 default N1=2 kernelpagesize_kB=4\n");
  dir.Write("proc/13/limits", "Max locked memory         unlimited            unlimited            bytes\n");
  Collected c = CollectWorkloads(NodeFs(dir.path() + "/sys", dir.path() + "/proc"), {ByUnit("app", "app.service")});
  const WorkloadFacts& w = c.facts.workloads.at(0);
  ASSERT_EQ(w.processes.size(), 2u);
  EXPECT_EQ(w.processes[0].pid, 12);
  EXPECT_EQ(w.processes[0].cpus_allowed->ToString(), "16-17");
  EXPECT_FALSE(w.processes[0].memory_bytes_by_node);
  EXPECT_NE(w.processes[0].memory_note.find("numa_maps"), std::string::npos) << w.processes[0].memory_note;
  EXPECT_FALSE(w.processes[0].memlock);
  EXPECT_NE(w.processes[0].memlock_note.find("Max locked memory"), std::string::npos);
  EXPECT_EQ(w.processes[1].pid, 13);
  EXPECT_FALSE(w.processes[1].cpus_allowed);
  EXPECT_NE(w.processes[1].cpus_note.find("reversed"), std::string::npos);
  EXPECT_EQ(w.processes[1].memory_bytes_by_node->at(1), 8192u);
  EXPECT_EQ(c.errors.size(), 3u);  // numa_maps, limits, cpulist; the exited ones are not errors
  // The metrics carry what is known: the unlimited limit of pid 13 and pid 12's unknown one are not mixed up.
  EXPECT_NE(c.text.find("rdma_workload_memlock_limit_bytes{workload=\"app\"} +Inf\n"), std::string::npos) << c.text;
}

// Listed pids none of which can be read (hidepid, or all exited): unknown, not "not running".
TEST(WorkloadsCollectorTest, ListedButUnreadablePidsAreUnknown) {
  TempDir dir;
  dir.Write("sys/fs/cgroup/system.slice/hidden.service/cgroup.procs", "70\n71\n");
  dir.MkDir("proc");
  Collected c = CollectWorkloads(NodeFs(dir.path() + "/sys", dir.path() + "/proc"), {ByUnit("hidden", "hidden.service")});
  const WorkloadFacts& w = c.facts.workloads.at(0);
  EXPECT_FALSE(w.looked_up);
  EXPECT_NE(w.note.find("2 pid(s) listed by hidden.service but none readable"), std::string::npos) << w.note;
  EXPECT_EQ(c.text.find("workload=\"hidden\""), std::string::npos);
}

// A kernel without CONFIG_NUMA has no numa_maps: the process stays, its memory placement unknown.
TEST(WorkloadsCollectorTest, NoNumaMapsIsNotAnExitedProcess) {
  TempDir dir;
  dir.Write("sys/fs/cgroup/system.slice/app.service/cgroup.procs", "80\n");
  dir.Write("proc/80/status", "Name:\tapp\nState:\tS (sleeping)\nCpus_allowed_list:\t0-3\n");
  dir.Write("proc/80/limits", "Max locked memory         unlimited            unlimited            bytes\n");
  Collected c = CollectWorkloads(NodeFs(dir.path() + "/sys", dir.path() + "/proc"), {ByUnit("app", "app.service")});
  const WorkloadFacts& w = c.facts.workloads.at(0);
  ASSERT_EQ(w.processes.size(), 1u);
  EXPECT_FALSE(w.processes[0].memory_bytes_by_node);
  EXPECT_NE(w.processes[0].memory_note.find("numa_maps"), std::string::npos);
  EXPECT_TRUE(w.processes[0].memlock);
}

TEST(WorkloadsCollectorTest, OwnLimitOnTheLiveProcIsInjectable) {
  const MemlockLimit injected{{false, 8u << 20}, {true, 0}};
  Collected c = CollectWorkloads(NodeFs(ProjectFixture(kFixture + "/sys"), "/proc"), {},
                    [&]() -> Result<MemlockLimit> { return injected; });
  ASSERT_TRUE(c.facts.daemon_memlock);
  EXPECT_EQ(*c.facts.daemon_memlock, injected);
  EXPECT_NE(c.text.find("rdma_healthd_memlock_limit_bytes 8388608\n"), std::string::npos) << c.text;
  Collected failed = CollectWorkloads(NodeFs(ProjectFixture(kFixture + "/sys"), "/proc/"), {},
                         []() -> Result<MemlockLimit> { return Error{"getrlimit(RLIMIT_MEMLOCK): test"}; });
  EXPECT_FALSE(failed.facts.daemon_memlock);
  EXPECT_EQ(failed.facts.daemon_memlock_note, "getrlimit(RLIMIT_MEMLOCK): test");
  // The real one agrees with the kernel's view of this process.
  auto own = OwnMemlockLimit();
  ASSERT_TRUE(own.ok());
  Collected live = CollectWorkloads(NodeFs(ProjectFixture(kFixture + "/sys"), "/proc"), {});
  EXPECT_EQ(live.facts.daemon_memlock, *own);
}

TEST(WorkloadsCollectorTest, LiveProcFindsThisTestByName) {
  auto comm = ReadRegularFile("/proc/self/comm", 64);
  ASSERT_TRUE(comm.ok());
  std::string name = comm->substr(0, comm->find('\n'));
  Collected c = CollectWorkloads(NodeFs("/sys", "/proc"), {ByName("self", name)});
  const WorkloadFacts& w = c.facts.workloads.at(0);
  ASSERT_TRUE(w.looked_up) << w.note;
  bool found = false;
  for (const auto& p : w.processes) {
    if (p.pid != ::getpid()) continue;
    found = true;
    EXPECT_TRUE(p.cpus_allowed);
    EXPECT_TRUE(p.memory_bytes_by_node) << p.memory_note;
    EXPECT_TRUE(p.memlock);
  }
  EXPECT_TRUE(found);
}

// The NUMA node folder is listed when the collector first runs and again after
// kNetdevRelistInterval; the cpulists are re-read on every collection.
TEST(WorkloadsCollectorTest, NodeFolderIsListedAgainOnlyAfterTheInterval) {
  TempDir dir;
  dir.Write("sys/devices/system/node/node0/cpulist", "0-3\n");
  dir.MkDir("proc");
  auto clock = std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
  WorkloadsCollector collector(OwnMemlockLimit, [clock] { return *clock; });
  const NodeFs fs(dir.path() + "/sys", dir.path() + "/proc");
  auto node_cpus = [&] {
    Config config;
    Topology topology;
    Snapshot snapshot;
    CollectorOutcome outcome;
    EXPECT_TRUE(collector.Collect(CollectContext{fs, config, topology}, snapshot, outcome).ok());
    std::map<int, std::string> out;
    for (const auto& [node, cpus] : snapshot.Get<WorkloadsFacts>()->node_cpus) out[node] = cpus.ToString();
    return out;
  };
  using M = std::map<int, std::string>;
  EXPECT_EQ(node_cpus(), (M{{0, "0-3"}}));
  dir.Write("sys/devices/system/node/node0/cpulist", "0-1\n");
  dir.Write("sys/devices/system/node/node1/cpulist", "2-3\n");
  *clock += kNetdevRelistInterval - std::chrono::seconds(1);
  EXPECT_EQ(node_cpus(), (M{{0, "0-1"}}));
  *clock += std::chrono::seconds(1);
  EXPECT_EQ(node_cpus(), (M{{0, "0-1"}, {1, "2-3"}}));
}

}  // namespace
}  // namespace rdmahd
