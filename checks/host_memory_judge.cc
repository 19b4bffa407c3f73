#include "checks/host_memory_judge.h"

#include <algorithm>
#include <cstdio>
#include <set>

namespace rdmahd {
namespace {

CheckResult Judged(std::string subject, Verdict v, std::string reason, std::string fix = "") {
  return CheckResult{"", std::move(subject), v, std::move(reason), std::move(fix)};
}

std::string Join(const std::set<int>& nodes) {
  std::string out;
  for (int n : nodes) {
    if (!out.empty()) out += ',';
    out += std::to_string(n);
  }
  return out;
}

std::string Percent(double share) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.0f%%", share * 100);
  return buf;
}

// The size in the kernel's folder names: hugepages-2048kB.
std::string PoolDirName(std::uint64_t size_bytes) { return "hugepages-" + std::to_string(size_bytes / 1024) + "kB"; }

std::string Count(const std::optional<std::uint64_t>& v) { return v ? std::to_string(*v) : "?"; }

// ---- hugepages_free --------------------------------------------------------------------------------

std::string NodeOf(const DevicePlacement& d) {
  return d.numa_node ? "numa_node " + std::to_string(*d.numa_node) : "numa_node unreadable";
}

CheckResult JudgePool(const std::string& device, const HugepagePool& pool, std::uint64_t min_free,
                      const std::string& where, const std::string& nr_path, const std::string& prefix) {
  if (!pool.free) {
    return Judged(device, Verdict::kUnknown, prefix + "free hugepages " + where + " unknown: no free_hugepages value");
  }
  // Free pages include those reserved by mappings not yet faulted in; the kernel counts
  // reservations system-wide only, so per node all free pages count.
  const std::uint64_t reserved = std::min(pool.reserved.value_or(0), *pool.free);
  const std::uint64_t available = *pool.free - reserved;
  std::string counts = std::to_string(*pool.free) + " free";
  if (reserved > 0) counts += " (" + std::to_string(reserved) + " of them reserved)";
  const std::string size_note = " (total " + Count(pool.total) + ", surplus " + Count(pool.surplus) + ")";
  if (available >= min_free) {
    return Judged(device, Verdict::kOk, prefix + counts + " " + where + size_note + " >= " + std::to_string(min_free));
  }
  std::string fix;
  if (pool.total) {
    fix = "echo " + std::to_string(*pool.total + (min_free - available)) + " > " + nr_path;
  } else {
    fix = "raise " + nr_path + " by " + std::to_string(min_free - available);
  }
  return Judged(device, Verdict::kFailed,
                prefix + "only " + counts + " " + where + size_note + ", need " + std::to_string(min_free) +
                    ": hugepage allocations of the RDMA workload fail or land on another node",
                fix);
}

// ---- workload_numa -----------------------------------------------------------------------------------

Verdict Worst(const std::vector<Verdict>& parts) {
  const auto has = [&](Verdict v) { return std::find(parts.begin(), parts.end(), v) != parts.end(); };
  if (has(Verdict::kFailed)) return Verdict::kFailed;
  if (has(Verdict::kWarning)) return Verdict::kWarning;
  if (has(Verdict::kUnknown)) return Verdict::kUnknown;
  return Verdict::kOk;
}

std::string NumaFix(const WorkloadSpec& spec, const std::set<int>& nodes, const CpuList& local_cpus) {
  const std::string n = Join(nodes);
  if (!spec.systemd_unit.empty()) {
    return "systemctl edit " + spec.systemd_unit + " ([Service] CPUAffinity=" + local_cpus.ToString() +
           " NUMAPolicy=bind NUMAMask=" + n + "), then systemctl restart " + spec.systemd_unit;
  }
  return "restart it under numactl --cpunodebind=" + n + " --membind=" + n + " <command>";
}

// How the workload was looked for; a pid file as the collector names it (a bundle's, as on the
// captured node: WorkloadFacts::selector_value).
std::string Selector(const WorkloadSpec& s, const WorkloadFacts& w) {
  if (!s.process.empty()) return "process name " + s.process;
  if (!s.pid_file.empty()) return "pid file " + (w.selector_value.empty() ? s.pid_file : w.selector_value);
  return "systemd unit " + s.systemd_unit;
}

// The workload's facts, or a result saying why there are none to judge.
const WorkloadFacts* RunningWorkload(const WorkloadsFacts* facts, const WorkloadSpec& spec, std::vector<CheckResult>& out) {
  if (facts == nullptr) {
    out.push_back(Judged(spec.name, Verdict::kUnknown, "workload facts missing: the workloads collector is disabled or failed"));
    return nullptr;
  }
  const WorkloadFacts* w = facts->Find(spec.name);
  if (w == nullptr) {
    out.push_back(Judged(spec.name, Verdict::kUnknown, "workload not collected (configuration changed since the collection)"));
    return nullptr;
  }
  if (!w->looked_up) {
    out.push_back(Judged(spec.name, Verdict::kUnknown, "cannot look up the workload: " + w->note));
    return nullptr;
  }
  if (w->processes.empty()) {
    out.push_back(Judged(spec.name, Verdict::kUnknown,
                         "not running: no process found by " + Selector(spec, *w) + (w->note.empty() ? "" : " (" + w->note + ")"),
                         "start the workload, or correct host.workloads (name " + spec.name + ")"));
    return nullptr;
  }
  return w;
}

std::string Pids(const WorkloadFacts& w, std::size_t max = 8) {
  std::string out;
  for (std::size_t i = 0; i < w.processes.size() && i < max; ++i) {
    if (!out.empty()) out += ',';
    out += std::to_string(w.processes[i].pid);
  }
  if (w.processes.size() > max) out += ",...";
  return out;
}

// ---- memlock -----------------------------------------------------------------------------------------

std::string LimitText(const LimitValue& v) { return v.unlimited ? "unlimited" : HumanBytes(v.value); }

std::string Wanted(const MemlockPolicy& p) {
  return p.require_unlimited ? "unlimited" : "unlimited or >= " + HumanBytes(p.min_bytes);
}

bool Passes(const MemlockLimit& l, const MemlockPolicy& p) {
  if (l.soft.unlimited) return true;
  return !p.require_unlimited && l.soft.value >= p.min_bytes;
}

std::string Describe(const MemlockLimit& l) {
  return "soft " + LimitText(l.soft) + ", hard " + LimitText(l.hard);
}

}  // namespace

std::string HumanBytes(std::uint64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " bytes";
  double v = static_cast<double>(bytes);
  int unit = -1;
  while (v >= 1024 && unit < 5) {
    v /= 1024;
    ++unit;
  }
  char buf[32];
  if (v == static_cast<double>(static_cast<std::uint64_t>(v))) {
    std::snprintf(buf, sizeof buf, "%llu %s", static_cast<unsigned long long>(v), kUnits[unit]);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[unit]);
  }
  return buf;
}

std::vector<CheckResult> JudgeHugepagesFree(const HostMemoryFacts* facts, const std::vector<DevicePlacement>& devices,
                                            const HugepagesPolicy& policy) {
  std::vector<CheckResult> out;
  for (const DevicePlacement& d : devices) {
    if (!policy.min_free) {
      out.push_back(Judged(d.device, Verdict::kUnknown, "not configured (host.hugepages.min_free)",
                           "set host.hugepages.min_free (and page_size) in the config file"));
      continue;
    }
    if (facts == nullptr) {
      out.push_back(Judged(d.device, Verdict::kUnknown, "hugepage facts missing: the hugepages collector is disabled or failed"));
      continue;
    }
    const std::optional<std::uint64_t> size = policy.page_size_bytes ? policy.page_size_bytes : facts->default_hugepage_size_bytes;
    if (!size) {
      out.push_back(Judged(d.device, Verdict::kUnknown,
                           "default hugepage size unknown (" + facts->meminfo_note + "); set host.hugepages.page_size",
                           "set host.hugepages.page_size in the config file"));
      continue;
    }
    const std::string pool_name = PoolDirName(*size);
    const HugepageSizeFacts* pools = facts->FindSize(*size);
    if (pools == nullptr) {
      if (facts->hugepage_sizes.empty()) {
        out.push_back(Judged(d.device, Verdict::kUnknown, "hugepage pools unknown: " + facts->hugepages_note));
        continue;
      }
      std::string sizes;
      for (const auto& s : facts->hugepage_sizes) sizes += (sizes.empty() ? "" : ", ") + HumanBytes(s.size_bytes);
      out.push_back(Judged(d.device, Verdict::kFailed,
                           "the kernel has no " + HumanBytes(*size) + " hugepage pool (pools: " + sizes + ")",
                           "boot with hugepagesz=" + std::to_string(*size >> 10) + "K hugepages=" +
                               std::to_string(*policy.min_free) + " on the kernel command line"));
      continue;
    }
    const std::string what = HumanBytes(*size) + " hugepages";
    if (d.numa_node && *d.numa_node >= 0) {
      const int node = *d.numa_node;
      auto it = pools->nodes.find(node);
      if (it == pools->nodes.end()) {
        std::string why;
        for (const auto& n : pools->notes) why += "; " + n;
        out.push_back(Judged(d.device, Verdict::kUnknown,
                             "no per-node " + what + " counts for node " + std::to_string(node) + why));
        continue;
      }
      out.push_back(JudgePool(d.device, it->second, *policy.min_free, what + " on node " + std::to_string(node),
                              "/sys/devices/system/node/node" + std::to_string(node) + "/hugepages/" + pool_name +
                                  "/nr_hugepages",
                              ""));
      continue;
    }
    // No NUMA affinity: the system-wide pool is all that can be judged.
    out.push_back(JudgePool(d.device, pools->system, *policy.min_free, what + " system-wide",
                            "/sys/kernel/mm/hugepages/" + pool_name + "/nr_hugepages",
                            "NUMA node of " + d.device + " unknown (" + NodeOf(d) + "), judged system-wide: "));
  }
  return out;
}

std::vector<CheckResult> JudgeWorkloadNuma(const WorkloadsFacts* facts, const std::vector<DevicePlacement>& devices,
                                           const HostMemoryPolicy& policy) {
  std::vector<CheckResult> out;
  for (const WorkloadSpec& spec : policy.workloads) {
    const WorkloadFacts* w = RunningWorkload(facts, spec, out);
    if (w == nullptr) continue;
    // The NIC's node(s).
    std::set<int> nodes;
    std::string nic;
    bool unknown_node = false;
    std::string unknown_why;
    for (const DevicePlacement& d : devices) {
      if (spec.device && d.device != *spec.device) continue;
      nic += (nic.empty() ? "" : ",") + d.device;
      if (d.numa_node && *d.numa_node >= 0) {
        nodes.insert(*d.numa_node);
      } else {
        unknown_node = true;
        unknown_why += (unknown_why.empty() ? "" : ", ") + d.device + " " + NodeOf(d);
      }
    }
    if (nic.empty()) {
      out.push_back(Judged(spec.name, Verdict::kUnknown,
                           spec.device ? "RDMA device " + *spec.device + " not found" : std::string("no RDMA device"),
                           spec.device ? "correct host.workloads device of " + spec.name : ""));
      continue;
    }
    // One NUMA node: nothing can be remote, whatever the NIC's numa_node says (single-socket
    // hosts often report -1).
    if (facts->node_cpus.size() == 1) {
      out.push_back(Judged(spec.name, Verdict::kOk,
                           "single NUMA node (node " + std::to_string(facts->node_cpus.begin()->first) +
                               "): CPUs and memory are local to " + nic));
      continue;
    }
    if (nodes.empty() || (spec.device && unknown_node)) {
      out.push_back(Judged(spec.name, Verdict::kUnknown, "NUMA node of the NIC unknown (" + unknown_why + ")"));
      continue;
    }
    const std::string on = "node " + Join(nodes) + " (" + nic + ")";
    std::vector<Verdict> parts;
    std::vector<std::string> reasons;
    // CPUs.
    std::optional<CpuList> allowed;
    std::string cpus_unknown;
    for (const auto& p : w->processes) {
      if (p.cpus_allowed) {
        allowed = allowed ? allowed->Union(*p.cpus_allowed) : *p.cpus_allowed;
      } else {
        cpus_unknown = "pid " + std::to_string(p.pid) + ": " + p.cpus_note;
      }
    }
    CpuList local_cpus;
    bool local_known = true;
    for (int n : nodes) {
      auto it = facts->node_cpus.find(n);
      if (it == facts->node_cpus.end()) {
        local_known = false;
        break;
      }
      local_cpus = local_cpus.Union(it->second);
    }
    if (!allowed) {
      parts.push_back(Verdict::kUnknown);
      reasons.push_back("CPUs unknown (" + cpus_unknown + ")");
    } else if (!local_known) {
      parts.push_back(Verdict::kUnknown);
      reasons.push_back("CPUs of " + on + " unknown" + (facts->nodes_note.empty() ? "" : " (" + facts->nodes_note + ")"));
    } else {
      const std::uint64_t total = allowed->count();
      const std::uint64_t local = allowed->CountIn(local_cpus);
      const std::string text = std::to_string(local) + " of " + std::to_string(total) + " allowed CPUs (" +
                               allowed->ToString() + ") on " + on;
      parts.push_back(local == total ? Verdict::kOk : local == 0 ? Verdict::kFailed : Verdict::kWarning);
      reasons.push_back(text);
      if (!cpus_unknown.empty()) {
        parts.push_back(Verdict::kUnknown);
        reasons.push_back("some CPUs unknown (" + cpus_unknown + ")");
      }
    }
    // Memory.
    std::uint64_t mem_total = 0, mem_local = 0;
    bool mem_any = false;
    std::string mem_unknown;
    for (const auto& p : w->processes) {
      if (!p.memory_bytes_by_node) {
        mem_unknown = "pid " + std::to_string(p.pid) + ": " + p.memory_note;
        continue;
      }
      mem_any = true;
      for (const auto& [node, bytes] : *p.memory_bytes_by_node) {
        mem_total += bytes;
        if (nodes.count(node)) mem_local += bytes;
      }
    }
    if (!mem_any) {
      parts.push_back(Verdict::kUnknown);
      reasons.push_back("memory placement unknown (" + mem_unknown + ")");
    } else if (mem_total == 0) {
      reasons.push_back("no resident memory yet");
    } else {
      const double share = static_cast<double>(mem_local) / static_cast<double>(mem_total);
      parts.push_back(share >= policy.workload_numa.min_local_memory_share ? Verdict::kOk
                      : mem_local == 0                                      ? Verdict::kFailed
                                                                            : Verdict::kWarning);
      reasons.push_back("memory " + HumanBytes(mem_local) + " of " + HumanBytes(mem_total) + " (" + Percent(share) +
                        ") on " + on + ", need " + Percent(policy.workload_numa.min_local_memory_share));
      if (!mem_unknown.empty()) {
        parts.push_back(Verdict::kUnknown);
        reasons.push_back("some memory unknown (" + mem_unknown + ")");
      }
    }
    const Verdict v = Worst(parts);
    std::string reason;
    for (const auto& r : reasons) reason += (reason.empty() ? "" : "; ") + r;
    reason += " (pids " + Pids(*w) + ")";
    const bool misplaced = v == Verdict::kFailed || v == Verdict::kWarning;
    out.push_back(Judged(spec.name, v, reason, misplaced ? NumaFix(spec, nodes, local_cpus) : ""));
  }
  return out;
}

std::vector<CheckResult> JudgeMemlock(const WorkloadsFacts* facts, const HostMemoryPolicy& policy,
                                      bool daemon_registers_memory) {
  std::vector<CheckResult> out;
  const MemlockPolicy& p = policy.memlock;
  // The daemon itself.
  if (!daemon_registers_memory) {
    // nothing of its own to judge
  } else if (facts == nullptr) {
    out.push_back(Judged("rdma-healthd", Verdict::kUnknown, "workload facts missing: the workloads collector is disabled or failed"));
  } else if (!facts->daemon_memlock) {
    out.push_back(Judged("rdma-healthd", Verdict::kUnknown, "locked-memory limit unknown: " + facts->daemon_memlock_note));
  } else if (!Passes(*facts->daemon_memlock, p) && facts->daemon_cap_ipc_lock.value_or(false)) {
    out.push_back(Judged("rdma-healthd", Verdict::kOk, "locked-memory limit " + Describe(*facts->daemon_memlock) +
                                                           ", but CAP_IPC_LOCK lifts it (pinned memory is not counted)"));
  } else if (Passes(*facts->daemon_memlock, p)) {
    out.push_back(Judged("rdma-healthd", Verdict::kOk, "locked-memory limit " + Describe(*facts->daemon_memlock) +
                                                           ", need " + Wanted(p)));
  } else {
    out.push_back(Judged("rdma-healthd", Verdict::kFailed,
                         "locked-memory limit " + Describe(*facts->daemon_memlock) + ", need " + Wanted(p) +
                             ": memory registration by the daemon's RDMA probes fails beyond it",
                         "systemctl edit rdma-healthd ([Service] LimitMEMLOCK=infinity), then systemctl restart rdma-healthd"));
  }
  for (const WorkloadSpec& spec : policy.workloads) {
    const WorkloadFacts* w = RunningWorkload(facts, spec, out);
    if (w == nullptr) continue;
    const WorkloadProcessFacts* worst = nullptr;  // the lowest soft limit among failing processes
    std::string unknown;
    std::string lifted;  // pids below the policy whose CAP_IPC_LOCK makes the limit moot
    int lifted_count = 0;
    std::optional<MemlockLimit> lowest;  // the lowest soft limit among the known ones
    for (const auto& proc : w->processes) {
      if (!proc.memlock) {
        unknown += (unknown.empty() ? "" : "; ") + ("pid " + std::to_string(proc.pid) + ": " + proc.memlock_note);
        continue;
      }
      if (!lowest || (!proc.memlock->soft.unlimited &&
                      (lowest->soft.unlimited || proc.memlock->soft.value < lowest->soft.value))) {
        lowest = proc.memlock;
      }
      if (!Passes(*proc.memlock, p) && proc.cap_ipc_lock.value_or(false)) {
        if (lifted_count < 8) lifted += (lifted.empty() ? "" : ",") + std::to_string(proc.pid);
        if (++lifted_count == 9) lifted += ",...";
      }
      if (!Passes(*proc.memlock, p) && !proc.cap_ipc_lock.value_or(false) && (worst == nullptr || proc.memlock->soft.value < worst->memlock->soft.value)) {
        worst = &proc;
      }
    }
    if (worst != nullptr) {
      std::string fix;
      if (!spec.systemd_unit.empty()) {
        fix = "systemctl edit " + spec.systemd_unit + " ([Service] LimitMEMLOCK=infinity), then systemctl restart " +
              spec.systemd_unit;
      } else {
        fix = "prlimit --pid " + std::to_string(worst->pid) +
              " --memlock=unlimited:unlimited (running process), and for new sessions a line "
              "\"* - memlock unlimited\" in /etc/security/limits.d/rdma.conf (or LimitMEMLOCK=infinity in its unit)";
      }
      out.push_back(Judged(spec.name, Verdict::kFailed,
                           "pid " + std::to_string(worst->pid) + " (" + worst->comm + ") locked-memory limit " +
                               Describe(*worst->memlock) + ", need " + Wanted(p) +
                               ": memory registration (ibv_reg_mr) fails beyond it",
                           fix));
    } else if (!unknown.empty()) {
      out.push_back(Judged(spec.name, Verdict::kUnknown, "locked-memory limit unknown: " + unknown));
    } else {
      out.push_back(Judged(spec.name, Verdict::kOk,
                           "locked-memory limit " + Describe(*lowest) +
                               (w->processes.size() == 1 ? " for pid " + Pids(*w)
                                                         : " (lowest) for " + std::to_string(w->processes.size()) +
                                                               " processes (pids " + Pids(*w) + ")") +
                               ", need " + Wanted(p) +
                               (lifted.empty() ? "" : "; CAP_IPC_LOCK lifts it for pids " + lifted)));
    }
  }
  return out;
}

}  // namespace rdmahd
