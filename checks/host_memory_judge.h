// Host memory verdicts as pure functions over facts and policy, so they are tested without a
// node: hugepages_free, workload_numa and memlock. The registered checks (host_memory_checks.cc)
// only gather the inputs from the Snapshot. Results leave CheckResult::check empty.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/check.h"
#include "config/config.h"
#include "facts/host_memory_facts.h"
#include "facts/workload_facts.h"

namespace rdmahd {

// Where an RDMA device sits, as the checks need it (from the Topology). numa_node as read: -1 means
// the platform gave no NUMA affinity (unknown, not node 0); absent means it could not be read.
struct DevicePlacement {
  std::string device;
  std::optional<int> numa_node;
};

// "2 MiB", "1 GiB", "64 KiB", "1.5 GiB", "512 bytes": byte counts as people read them.
std::string HumanBytes(std::uint64_t bytes);

// One result per device: free hugepages of the policy's size on the device's node >= min_free.
// `facts` null: the hugepages collector did not run.
std::vector<CheckResult> JudgeHugepagesFree(const HostMemoryFacts* facts, const std::vector<DevicePlacement>& devices,
                                            const HugepagesPolicy& policy);

// What the workload judges need from the config: host.workloads, host.memlock, host.workload_numa.
struct HostMemoryPolicy {
  std::vector<WorkloadSpec> workloads;
  MemlockPolicy memlock;
  WorkloadNumaPolicy workload_numa;
};

// One result per configured workload: its allowed CPUs and resident memory on the NIC's node.
std::vector<CheckResult> JudgeWorkloadNuma(const WorkloadsFacts* facts, const std::vector<DevicePlacement>& devices,
                                           const HostMemoryPolicy& policy);

// One result for the daemon (subject "rdma-healthd") and one per configured workload: soft
// RLIMIT_MEMLOCK unlimited or >= policy.
// `daemon_registers_memory`: the daemon itself pins memory (peer probes or the probe responder
// are configured); only then is its own limit judged (subject "rdma-healthd"). Otherwise its limit
// matters to nothing and a shell's 8 MiB would be a false failure of `rdma-healthd check`.
std::vector<CheckResult> JudgeMemlock(const WorkloadsFacts* facts, const HostMemoryPolicy& policy,
                                      bool daemon_registers_memory = true);

}  // namespace rdmahd
