// The "workloads" collector: the RDMA workloads configured under host.workloads, found by process
// name (comm), pid file or systemd unit (the pids in its cgroup's cgroup.procs), and per process
// its allowed CPUs (/proc/PID/status), its resident memory per NUMA node (/proc/PID/numa_maps) and
// its locked-memory limit (/proc/PID/limits); the NUMA nodes' CPU lists; and the daemon's own
// RLIMIT_MEMLOCK. Facts: WorkloadsFacts (facts/workload_facts.h).
//
// A process that exits while it is read is dropped (ENOENT/ESRCH on any of its files, or a zombie). Another
// user's process whose numa_maps the daemon may not read (EACCES without CAP_SYS_PTRACE) keeps
// what could be read, with the reason for the rest. Scrape cost: the NUMA nodes' cpulists and the
// daemon's own status are held open (the node folder is listed again every kNetdevRelistInterval,
// or when a cpulist went away); one /proc listing and one /proc/PID/comm read per process when a
// workload is found by name; numa_maps grows with the number of mappings (capped per file at
// kMaxNumaMapsBytes).
#pragma once

#include <functional>
#include <string>

#include "collectors/listing_cache.h"
#include "common/held_files.h"
#include "core/collector.h"
#include "common/result.h"
#include "facts/workload_facts.h"

namespace rdmahd {

// The daemon's own RLIMIT_MEMLOCK (getrlimit), or an error.
Result<MemlockLimit> OwnMemlockLimit();

class WorkloadsCollector : public Collector {
 public:
  using MemlockSource = std::function<Result<MemlockLimit>()>;
  static constexpr std::size_t kMaxNumaMapsBytes = std::size_t{32} << 20;
  // A unit can hold thousands of pids (a build, a fork bomb); the placement of the first ones
  // tells as much, and the bound keeps a scrape short.
  static constexpr std::size_t kMaxProcessesPerWorkload = 256;

  // `own_memlock`: where the daemon's limit comes from on the live /proc (tests inject one). On a
  // procfs root that is not the live /proc the limit is read from <procfs>/self/limits, when the
  // capture has one.
  explicit WorkloadsCollector(MemlockSource own_memlock = OwnMemlockLimit,
                              SteadyNow now = std::chrono::steady_clock::now)
      : own_memlock_(std::move(own_memlock)), node_listings_(std::move(now)) {}

  Status Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& outcome) override;
  void Render(const Snapshot& snapshot, MetricSink& sink) const override;

 private:
  MemlockSource own_memlock_;
  HeldFiles held_;  // node cpulists, the daemon's own /proc/self/status
  ListingCache node_listings_;  // devices/system/node: listed again every kNetdevRelistInterval
};

}  // namespace rdmahd
