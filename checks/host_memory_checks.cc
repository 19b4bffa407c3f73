// Host memory checks: hugepages_free, workload_numa, memlock. The verdict logic is in
// host_memory_judge.h; these gather the inputs. Device placement comes from the Topology
// (numa_node as read, -1 kept).
#include "checks/host_memory_judge.h"
#include "core/check.h"
#include "core/topology.h"

namespace rdmahd {
namespace {

void Append(std::vector<CheckResult> results, std::vector<CheckResult>& out) {
  for (auto& r : results) out.push_back(std::move(r));
}

std::vector<DevicePlacement> Placements(const Snapshot& snapshot) {
  std::vector<DevicePlacement> out;
  if (const auto* topology = snapshot.Get<Topology>()) {
    for (const auto& d : topology->devices) out.push_back({d.name, d.numa_node});
  }
  return out;
}

class HugepagesFreeCheck : public Check {
 public:
  void Evaluate(const Snapshot& snapshot, const Config& config, std::vector<CheckResult>& out) const override {
    Append(JudgeHugepagesFree(snapshot.Get<HostMemoryFacts>(), Placements(snapshot), config.host.hugepages), out);
  }
};

class WorkloadNumaCheck : public Check {
 public:
  void Evaluate(const Snapshot& snapshot, const Config& config, std::vector<CheckResult>& out) const override {
    Append(JudgeWorkloadNuma(snapshot.Get<WorkloadsFacts>(), Placements(snapshot), config.host), out);
  }
};

class MemlockCheck : public Check {
 public:
  void Evaluate(const Snapshot& snapshot, const Config& config, std::vector<CheckResult>& out) const override {
    const bool daemon_registers_memory =
        !config.peers.targets.empty() || !config.peers.file.empty() || config.peers.responder.enabled;
    Append(JudgeMemlock(snapshot.Get<WorkloadsFacts>(), config.host, daemon_registers_memory), out);
  }
};

}  // namespace

RDMAHD_REGISTER_CHECK("hugepages_free", HugepagesFreeCheck,
                      "free hugepages of the configured size on each RDMA device's NUMA node");
RDMAHD_REGISTER_CHECK("workload_numa", WorkloadNumaCheck,
                      "configured workloads run and allocate on their RDMA device's NUMA node");
RDMAHD_REGISTER_CHECK("memlock", MemlockCheck, "locked-memory limit of the daemon and the configured workloads");

}  // namespace rdmahd
