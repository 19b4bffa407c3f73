// Host memory checks: hugepages_free, workload_numa, memlock. The verdict logic is in
// host_memory_judge.h; these gather the inputs. Device placement comes from the Topology
// (numa_node as read, -1 kept).
#include <cmath>

#include "checks/host_memory_judge.h"
#include "common/parse.h"
#include "config/config_section.h"
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
    Append(JudgeHugepagesFree(snapshot.Get<HostMemoryFacts>(), Placements(snapshot), config.Section<HugepagesPolicy>()), out);
  }
};

class WorkloadNumaCheck : public Check {
 public:
  void Evaluate(const Snapshot& snapshot, const Config& config, std::vector<CheckResult>& out) const override {
    const HostMemoryPolicy policy{config.Section<WorkloadsPolicy>().workloads, {}, config.Section<WorkloadNumaPolicy>()};
    Append(JudgeWorkloadNuma(snapshot.Get<WorkloadsFacts>(), Placements(snapshot), policy), out);
  }
};

class MemlockCheck : public Check {
 public:
  void Evaluate(const Snapshot& snapshot, const Config& config, std::vector<CheckResult>& out) const override {
    const PeersPolicy& peers = config.Section<PeersPolicy>();
    const bool daemon_registers_memory = !peers.targets.empty() || !peers.file.empty() || peers.responder.enabled;
    const HostMemoryPolicy policy{config.Section<WorkloadsPolicy>().workloads, config.Section<MemlockPolicy>(), {}};
    Append(JudgeMemlock(snapshot.Get<WorkloadsFacts>(), policy, daemon_registers_memory), out);
  }
};

// A hugepage size the kernel can have: a power of two from 64 KiB (arm64's smallest) to 16 GiB.
Status ReadHugepageSize(const ConfigWalker& w, const ConfigNode& v, std::optional<std::uint64_t>& out) {
  std::optional<std::uint64_t> bytes;
  Status st = w.ReadBytes(v, bytes);
  if (!st.ok() || !bytes) return st;
  if ((*bytes & (*bytes - 1)) != 0 || *bytes < (1ull << 16) || *bytes > (1ull << 34)) {
    return w.FailAt(v, "must be a hugepage size (a power of two from 64KiB to 16GiB: 2MiB, 1GiB), got " +
                           ConfigWalker::Describe(v.node));
  }
  out = bytes;
  return Status::Ok();
}

RDMAHD_REGISTER_CONFIG_SECTION(HugepagesPolicy, "host.hugepages", 10,
    {{"host.hugepages.page_size", "unset = the kernel's default (`Hugepagesize`)"},
     {"host.hugepages.min_free", "unset"}},
    [](const ConfigWalker& w, const ConfigNode& v, HugepagesPolicy& out) {
      return w.VisitMap(v, {
          {"page_size", [&](const ConfigNode& f) { return ReadHugepageSize(w, f, out.page_size_bytes); }},
          {"min_free", [&](const ConfigNode& f) { return w.ReadCount(f, out.min_free); }},
      });
    });

RDMAHD_REGISTER_CONFIG_SECTION(MemlockPolicy, "host.memlock", 20, {{"host.memlock.min_bytes", "`64MiB`"}},
    [](const ConfigWalker& w, const ConfigNode& v, MemlockPolicy& out) {
      return w.VisitMap(v, {
          {"min_bytes",
           [&](const ConfigNode& f) {
             if (f.node.IsScalar() && f.node.Scalar() == "unlimited") {
               out.require_unlimited = true;
               return Status::Ok();
             }
             std::optional<std::uint64_t> bytes;
             Status st = w.ReadBytes(f, bytes, " or \"unlimited\"");
             if (st.ok() && bytes) {
               out.min_bytes = *bytes;
               out.require_unlimited = false;
             }
             return st;
           }},
      });
    });

RDMAHD_REGISTER_CONFIG_SECTION(WorkloadNumaPolicy, "host.workload_numa", 30,
    {{"host.workload_numa.min_local_memory_share", "`0.9`"}},
    [](const ConfigWalker& w, const ConfigNode& v, WorkloadNumaPolicy& out) {
      return w.VisitMap(v, {
          {"min_local_memory_share",
           [&](const ConfigNode& f) {
             if (f.node.IsNull()) return Status::Ok();
             std::optional<double> share = f.node.IsScalar() ? ParseDouble(f.node.Scalar()) : std::nullopt;
             if (!share || !std::isfinite(*share) || *share <= 0 || *share > 1) {
               return w.FailAt(f, "must be a share greater than 0 and at most 1 (0.9 = 90%), got " +
                                      ConfigWalker::Describe(f.node));
             }
             out.min_local_memory_share = *share;
             return Status::Ok();
           }},
      });
    });

}  // namespace

RDMAHD_REGISTER_CHECK("hugepages_free", HugepagesFreeCheck,
                      "free hugepages of the configured size on each RDMA device's NUMA node");
RDMAHD_REGISTER_CHECK("workload_numa", WorkloadNumaCheck,
                      "configured workloads run and allocate on their RDMA device's NUMA node");
RDMAHD_REGISTER_CHECK("memlock", MemlockCheck, "locked-memory limit of the daemon and the configured workloads");

}  // namespace rdmahd
