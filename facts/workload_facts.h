// Workload facts: the configured RDMA workloads (found by process name, pid file or systemd
// unit), where they may run and where their memory is, their locked-memory limits, and the
// daemon's own limit. Stored by the "workloads" collector; data only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/cpulist.h"

namespace rdmahd {

// One value of a resource limit as /proc/PID/limits prints it: "unlimited" (RLIM_INFINITY) or a
// number (which can be just below RLIM_INFINITY, e.g. 18446744073708503040).
struct LimitValue {
  bool unlimited = false;
  std::uint64_t value = 0;  // meaningful when !unlimited
  bool operator==(const LimitValue&) const = default;
};

struct MemlockLimit {
  LimitValue soft;  // what the process gets (RLIMIT_MEMLOCK rlim_cur)
  LimitValue hard;  // what it may raise the soft limit to
  bool operator==(const MemlockLimit&) const = default;
};

struct WorkloadProcessFacts {
  int pid = 0;
  std::string comm;                          // /proc/PID/status Name

  std::optional<CpuList> cpus_allowed;       // /proc/PID/status Cpus_allowed_list
  std::string cpus_note;
  std::optional<std::map<int, std::uint64_t>> memory_bytes_by_node;  // /proc/PID/numa_maps
  std::string memory_note;
  std::optional<MemlockLimit> memlock;       // /proc/PID/limits "Max locked memory"
  std::string memlock_note;
  // CAP_IPC_LOCK in the effective set (/proc/PID/status CapEff): the kernel then does not hold
  // pinned (registered) memory against the limit. Absent: unknown.
  std::optional<bool> cap_ipc_lock;
};

enum class WorkloadSelector { kProcessName, kPidFile, kSystemdUnit };

struct WorkloadFacts {
  std::string name;                 // as configured
  WorkloadSelector selector = WorkloadSelector::kProcessName;
  std::string selector_value;       // the comm, pid file path or unit name
  std::optional<std::string> device;  // the RDMA device it uses, when configured

  // True: the processes below are all of it (possibly none: not running). False: it could not be
  // looked up (pid file or cgroup unreadable, /proc not listable): see note.
  bool looked_up = false;
  std::vector<WorkloadProcessFacts> processes;  // by pid; processes gone mid-read are dropped
  std::string note;
};

struct WorkloadsFacts {
  std::vector<WorkloadFacts> workloads;  // in config order

  // NUMA nodes' CPUs (/sys/devices/system/node/nodeN/cpulist); a memory-only node has an empty
  // list. Empty map: unknown (nodes_note says why).
  std::map<int, CpuList> node_cpus;
  std::string nodes_note;

  // The daemon's own RLIMIT_MEMLOCK (it registers memory for its probes).
  std::optional<MemlockLimit> daemon_memlock;
  std::string daemon_memlock_note;
  std::optional<bool> daemon_cap_ipc_lock;  // as cap_ipc_lock above

  const WorkloadFacts* Find(const std::string& name) const {
    for (const auto& w : workloads) {
      if (w.name == name) return &w;
    }
    return nullptr;
  }
};

}  // namespace rdmahd
