#include "collectors/workloads.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "common/parse.h"
#include "config/config_section.h"
#include "parsers/proc_pid_parse.h"

namespace rdmahd {
namespace {

// The process is gone (exited between listing and reading, or the pid was never there).
bool IsGone(const Error& e) { return e.errno_value == ENOENT || e.errno_value == ESRCH; }

std::optional<int> Pid(std::string_view s) {
  auto n = ParseU64(s);
  if (!n || *n == 0 || *n > 4194304) return std::nullopt;  // PID_MAX_LIMIT
  return static_cast<int>(*n);
}

LimitValue FromRlim(rlim_t v) { return v == RLIM_INFINITY ? LimitValue{true, 0} : LimitValue{false, static_cast<std::uint64_t>(v)}; }

// comm -> pids, from one listing of /proc (only when a workload is found by name).
class ProcessTable {
 public:
  Status Scan(const NodeFs& fs) {
    auto entries = fs.ListDir(fs.Proc(""));
    if (!entries) return entries.error();
    for (const std::string& name : *entries) {
      auto pid = Pid(name);
      if (!pid || name != std::to_string(*pid)) continue;
      auto comm = fs.ReadFile(fs.Proc(name + "/comm"));
      if (!comm) continue;  // exited, or hidden (hidepid): not ours to see
      std::string_view c = *comm;
      if (!c.empty() && c.back() == '\n') c.remove_suffix(1);
      by_comm_[std::string(c)].push_back(*pid);
    }
    return Status::Ok();
  }
  const std::vector<int>* Find(const std::string& comm) const {
    auto it = by_comm_.find(comm);
    return it == by_comm_.end() ? nullptr : &it->second;
  }

 private:
  std::map<std::string, std::vector<int>> by_comm_;
};

// Pids of a text with one pid per line (cgroup.procs, a pid file's first line).
Result<std::vector<int>> ParsePidLines(std::string_view text, const std::string& path) {
  std::vector<int> out;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view line = Trim(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (line.empty()) continue;
    auto pid = Pid(line);
    // The line itself is never shown: the file may be anything (a path in a hostile config).
    if (!pid) return Error{path + ": not a pid (a line of " + std::to_string(line.size()) + " bytes, not shown)"};
    out.push_back(*pid);
  }
  return out;
}

// A path of the config as the node it is about names it: a bundle's config is read with its paths
// under the extraction (Config::captured_root), and its verdicts name them as on the captured node.
std::string AsOnTheNode(const std::string& path, const std::string& captured_root) {
  if (captured_root.empty() || path.size() <= captured_root.size() || path.compare(0, captured_root.size(), captured_root) != 0 ||
      path[captured_root.size()] != '/') {
    return path;
  }
  return path.substr(captured_root.size());
}

// The pids of one workload; sets looked_up/note (naming the pid file as `shown`).
std::vector<int> FindPids(const NodeFs& fs, const WorkloadSpec& spec, const std::string& shown,
                          const ProcessTable* table, const Status& scan, WorkloadFacts& w) {
  if (!spec.process.empty()) {
    if (!scan.ok()) {
      w.note = "cannot list " + fs.Proc("") + ": " + scan.error().message;
      return {};
    }
    w.looked_up = true;
    const auto* pids = table->Find(spec.process);
    return pids ? *pids : std::vector<int>{};
  }
  if (!spec.pid_file.empty()) {
    auto text = fs.ReadFile(spec.pid_file);
    if (!text) {
      if (IsGone(text.error())) {
        // No pid file: the service is not running (daemons remove it on exit).
        w.looked_up = true;
        w.note = "the pid file does not exist";
      } else {
        w.note = text.error().message;
      }
      return {};
    }
    std::string_view first = *text;
    first = first.substr(0, first.find('\n'));
    auto pid = Pid(Trim(first));
    if (!pid) {
      w.note = shown + ": not a pid (its first line, " + std::to_string(Trim(first).size()) +
               " bytes, is not shown)";
      return {};
    }
    w.looked_up = true;
    if (!fs.Exists(fs.Proc(std::to_string(*pid)))) {
      w.note = "pid " + std::to_string(*pid) + " from " + shown + " is not running (stale pid file)";
      return {};
    }
    return {*pid};
  }
  // systemd unit: cgroup v2 (unified), then the v1 and hybrid layouts. systemd removes a unit's
  // cgroup when the unit stops, so none existing means not running.
  const std::string rel = "system.slice/" + spec.systemd_unit + "/cgroup.procs";
  for (const char* hierarchy : {"fs/cgroup/", "fs/cgroup/unified/", "fs/cgroup/systemd/"}) {
    const std::string path = fs.Sys(hierarchy + rel);
    auto text = fs.ReadFile(path, std::size_t{1} << 20);
    if (!text) {
      if (IsGone(text.error())) continue;
      w.note = text.error().message;
      return {};
    }
    auto pids = ParsePidLines(*text, path);
    if (!pids) {
      w.note = pids.error().message;
      return {};
    }
    w.looked_up = true;
    return *pids;
  }
  w.looked_up = true;
  w.note = "no cgroup " + fs.Sys("fs/cgroup/" + rel) + ": unit not running";
  return {};
}

// Reads one process; false when it is gone.
bool ReadProcess(const NodeFs& fs, int pid, std::uint64_t page_bytes, WorkloadProcessFacts& p,
                 std::vector<std::string>& errors) {
  p.pid = pid;
  const std::string dir = std::to_string(pid) + "/";
  auto status_text = fs.ReadFile(fs.Proc(dir + "status"));
  if (!status_text) {
    if (IsGone(status_text.error())) return false;
    p.cpus_note = status_text.error().message;
    errors.push_back(status_text.error().message);
  } else if (auto status = ParseProcStatus(*status_text)) {
    // A zombie has exited: no memory, nothing to place.
    if (status->state == 'Z' || status->state == 'X') return false;
    p.comm = status->name;
    p.cpus_allowed = status->cpus_allowed;
    p.cpus_note = status->cpus_note;
    if (!p.cpus_allowed) errors.push_back(fs.Proc(dir + "status") + ": " + p.cpus_note);
    if (status->cap_effective) p.cap_ipc_lock = ((*status->cap_effective >> kCapIpcLock) & 1) != 0;
  } else {
    p.cpus_note = fs.Proc(dir + "status") + ": " + status.error().message;
    errors.push_back(p.cpus_note);
  }

  auto maps = fs.ReadFile(fs.Proc(dir + "numa_maps"), WorkloadsCollector::kMaxNumaMapsBytes);
  if (!maps) {
    // A kernel without CONFIG_NUMA has no numa_maps: gone only when the process is.
    if (IsGone(maps.error()) && !fs.Exists(fs.Proc(std::to_string(pid)))) return false;
    p.memory_note = maps.error().message;  // EACCES: another user's process, no CAP_SYS_PTRACE
    errors.push_back(maps.error().message);
  } else if (auto bytes = ParseNumaMapsBytesByNode(*maps, page_bytes)) {
    p.memory_bytes_by_node = std::move(*bytes);
  } else {
    p.memory_note = fs.Proc(dir + "numa_maps") + ": " + bytes.error().message;
    errors.push_back(p.memory_note);
  }

  auto limits = fs.ReadFile(fs.Proc(dir + "limits"));
  if (!limits) {
    if (IsGone(limits.error())) return false;
    p.memlock_note = limits.error().message;
    errors.push_back(limits.error().message);
  } else if (auto l = ParseMemlockLimit(*limits)) {
    p.memlock = *l;
  } else {
    p.memlock_note = fs.Proc(dir + "limits") + ": " + l.error().message;
    errors.push_back(p.memlock_note);
  }
  return true;
}

std::optional<int> NodeNumber(const std::string& name) {
  if (name.size() < 5 || name.compare(0, 4, "node") != 0) return std::nullopt;
  auto n = ParseU64(std::string_view(name).substr(4));
  if (!n || *n > 65535 || name.substr(4) != std::to_string(*n)) return std::nullopt;
  return static_cast<int>(*n);
}

double LimitMetric(const LimitValue& v) {
  return v.unlimited ? std::numeric_limits<double>::infinity() : static_cast<double>(v.value);
}

}  // namespace

Result<MemlockLimit> OwnMemlockLimit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_MEMLOCK, &r) != 0) return Error::FromErrno("getrlimit(RLIMIT_MEMLOCK)", errno);
  return MemlockLimit{FromRlim(r.rlim_cur), FromRlim(r.rlim_max)};
}

Status WorkloadsCollector::Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& outcome) {
  const NodeFs& fs = ctx.fs;
  WorkloadsFacts facts;

  // The daemon's own limit and CAP_IPC_LOCK (on the live /proc, self is the daemon). getrlimit is
  // the live /proc's self/limits without the parsing, so it follows the procfs root, as that file
  // would: a captured procfs gives the captured daemon's limit whatever --path.sysfs is.
  if (auto text = held_.Read(fs, fs.Proc("self/status"))) {
    if (auto status = ParseProcStatus(*text); status && status->cap_effective) {
      facts.daemon_cap_ipc_lock = ((*status->cap_effective >> kCapIpcLock) & 1) != 0;
    }
  }
  if (NodeFs::IsLiveProcfsRoot(fs.procfs_root())) {
    if (auto own = own_memlock_()) facts.daemon_memlock = *own;
    else facts.daemon_memlock_note = own.error().message;
  } else {
    const std::string path = fs.Proc("self/limits");
    if (auto text = fs.ReadFile(path)) {
      if (auto l = ParseMemlockLimit(*text)) facts.daemon_memlock = *l;
      else facts.daemon_memlock_note = path + ": " + l.error().message;
    } else {
      facts.daemon_memlock_note = "--path.procfs is not /proc and " + text.error().message;
    }
  }

  // NUMA nodes' CPUs.
  const std::string nodes_dir = fs.Sys("devices/system/node");
  bool node_gone = false;
  if (const auto& entries = node_listings_.List(fs, nodes_dir)) {
    for (const std::string& name : *entries) {
      auto node = NodeNumber(name);
      if (!node) continue;
      const std::string path = nodes_dir + "/" + name + "/cpulist";
      auto text = held_.Read(fs, path);
      if (!text) {
        node_gone |= ListedEntryGone(fs, path, text.error());
        outcome.errors.push_back(text.error().message);
        continue;
      }
      auto cpus = ParseCpuList(*text);
      if (!cpus) {
        outcome.errors.push_back(path + ": " + cpus.error().message);
        continue;
      }
      facts.node_cpus[*node] = std::move(*cpus);
    }
  } else {
    facts.nodes_note = entries.error().message;
  }
  if (node_gone) node_listings_.Forget();  // a node went offline: list them again next time

  // Workloads.
  const auto& specs = ctx.config.Section<WorkloadsPolicy>().workloads;
  ProcessTable table;
  Status scan = Status::Ok();
  bool by_name = false;
  for (const auto& s : specs) by_name |= !s.process.empty();
  if (by_name) scan = table.Scan(fs);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  const std::uint64_t page_bytes = page_size > 0 ? static_cast<std::uint64_t>(page_size) : 4096;
  for (const WorkloadSpec& spec : specs) {
    WorkloadFacts w;
    w.name = spec.name;
    w.device = spec.device;
    if (!spec.process.empty()) {
      w.selector = WorkloadSelector::kProcessName;
      w.selector_value = spec.process;
    } else if (!spec.pid_file.empty()) {
      w.selector = WorkloadSelector::kPidFile;
      w.selector_value = AsOnTheNode(spec.pid_file, ctx.config.captured_root);
    } else {
      w.selector = WorkloadSelector::kSystemdUnit;
      w.selector_value = spec.systemd_unit;
    }
    std::vector<int> pids = FindPids(fs, spec, w.selector_value, &table, scan, w);
    if (!w.looked_up) outcome.errors.push_back("workload " + spec.name + ": " + w.note);
    if (pids.size() > kMaxProcessesPerWorkload) {
      w.note = std::to_string(pids.size()) + " processes, the first " + std::to_string(kMaxProcessesPerWorkload) + " read";
      pids.resize(kMaxProcessesPerWorkload);
    }
    for (int pid : pids) {
      WorkloadProcessFacts p;
      if (ReadProcess(fs, pid, page_bytes, p, outcome.errors)) w.processes.push_back(std::move(p));
    }
    // A unit's or pid file's pids that none can be read of: they exited just now, or /proc is
    // mounted with hidepid and hides them from the daemon. Either way not "not running".
    if (!pids.empty() && w.processes.empty()) {
      w.looked_up = false;
      w.note = std::to_string(pids.size()) + " pid(s) listed by " + w.selector_value + " but none readable in " +
               fs.Proc("") + " (exited, or hidden by the hidepid mount option)";
      outcome.errors.push_back("workload " + spec.name + ": " + w.note);
    }
    facts.workloads.push_back(std::move(w));
  }
  snapshot.Put(std::move(facts));
  return Status::Ok();
}

void WorkloadsCollector::Render(const Snapshot& snapshot, MetricSink& sink) const {
  const auto* f = snapshot.Get<WorkloadsFacts>();
  if (f == nullptr) return;
  if (f->daemon_memlock) {
    sink.Gauge("rdma_healthd_memlock_limit_bytes", "The daemon's own soft RLIMIT_MEMLOCK (+Inf: unlimited)")
        .Add({}, LimitMetric(f->daemon_memlock->soft));
  }
  auto up = sink.Gauge("rdma_workload_up", "1 when a configured workload has a running process, 0 when none");
  auto procs = sink.Gauge("rdma_workload_processes", "Processes found for a configured workload");
  auto memory = sink.Gauge("rdma_workload_memory_bytes", "Resident memory of a workload's processes on one NUMA node (numa_maps)");
  auto cpus = sink.Gauge("rdma_workload_allowed_cpus", "CPUs of one NUMA node a workload's processes may run on (Cpus_allowed_list)");
  auto memlock = sink.Gauge("rdma_workload_memlock_limit_bytes",
                            "Lowest soft locked-memory limit among a workload's processes (+Inf: unlimited)");
  for (const WorkloadFacts& w : f->workloads) {
    if (!w.looked_up) continue;  // unknown: no sample rather than a false 0
    up.Add({{"workload", w.name}}, w.processes.empty() ? 0 : 1);
    procs.Add({{"workload", w.name}}, static_cast<double>(w.processes.size()));
    if (w.processes.empty()) continue;
    std::map<int, std::uint64_t> bytes;
    bool memory_known = false;
    std::optional<CpuList> allowed;
    std::optional<LimitValue> lowest;
    for (const auto& p : w.processes) {
      if (p.memory_bytes_by_node) {
        memory_known = true;
        for (const auto& [node, b] : *p.memory_bytes_by_node) bytes[node] += b;
      }
      if (p.cpus_allowed) allowed = allowed ? allowed->Union(*p.cpus_allowed) : *p.cpus_allowed;
      if (p.memlock && (!lowest || (!p.memlock->soft.unlimited && (lowest->unlimited || p.memlock->soft.value < lowest->value)))) {
        lowest = p.memlock->soft;
      }
    }
    if (memory_known) {
      for (const auto& [node, _] : f->node_cpus) bytes.emplace(node, 0);  // every node, zeros too
      for (const auto& [node, b] : bytes) {
        memory.Add({{"workload", w.name}, {"node", std::to_string(node)}}, static_cast<double>(b));
      }
    }
    if (allowed) {
      for (const auto& [node, node_cpus] : f->node_cpus) {
        cpus.Add({{"workload", w.name}, {"node", std::to_string(node)}}, static_cast<double>(allowed->CountIn(node_cpus)));
      }
    }
    if (lowest) memlock.Add({{"workload", w.name}}, LimitMetric(*lowest));
  }
}

namespace {

// Workload names become label values, so they are short and plain, and their number is bounded.
constexpr std::size_t kMaxWorkloads = 32;
// The kernel keeps 15 bytes of a process name (TASK_COMM_LEN - 1).
constexpr std::size_t kMaxCommBytes = 15;

Status ParseWorkloads(const ConfigWalker& w, const ConfigNode& v, WorkloadsPolicy& policy) {
  std::vector<WorkloadSpec>& out = policy.workloads;
  std::vector<WorkloadSpec> workloads;
  Status st = w.VisitList(v, "a list of workloads (- name: ..., process: ...)", [&](const ConfigNode& item) {
    if (!item.node.IsMap()) {
      return w.FailAt(item, "must be a workload (name, and one of process, pid_file, systemd_unit), got " +
                              ConfigWalker::Describe(item.node));
    }
    if (workloads.size() == kMaxWorkloads) {
      return w.FailAt(item, "at most " + std::to_string(kMaxWorkloads) + " workloads (they are metric labels)");
    }
    WorkloadSpec spec;
    std::string device;
    Status inner = w.VisitMap(item, {
        {"name", [&](const ConfigNode& f) { return w.ReadString(f, spec.name); }},
        {"process", [&](const ConfigNode& f) { return w.ReadString(f, spec.process); }},
        {"pid_file", [&](const ConfigNode& f) { return w.ReadString(f, spec.pid_file); }},
        {"systemd_unit", [&](const ConfigNode& f) { return w.ReadString(f, spec.systemd_unit); }},
        {"device", [&](const ConfigNode& f) { return w.ReadString(f, device); }},
    });
    if (!inner.ok()) return inner;
    if (!device.empty()) spec.device = device;
    if (spec.name.empty()) return w.FailAt(item, "a workload needs a name");
    if (spec.name.size() > 64 || spec.name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                       "0123456789_.-") != std::string::npos) {
      return w.FailAt(item, "name " + ConfigWalker::Quote(spec.name) + " must be 1 to 64 of A-Z a-z 0-9 _ . - (it is a label value)");
    }
    for (const auto& earlier : workloads) {
      if (earlier.name == spec.name) return w.FailAt(item, "duplicate workload name " + ConfigWalker::Quote(spec.name));
    }
    const int selectors = !spec.process.empty() + !spec.pid_file.empty() + !spec.systemd_unit.empty();
    if (selectors != 1) {
      return w.FailAt(item, "workload " + ConfigWalker::Quote(spec.name) + " needs exactly one of process, pid_file, systemd_unit");
    }
    if (spec.process.find('/') != std::string::npos) {
      return w.FailAt(item, "process " + ConfigWalker::Quote(spec.process) + " is a path; give the process name (comm), e.g. " +
                              ConfigWalker::Quote(spec.process.substr(spec.process.rfind('/') + 1).substr(0, kMaxCommBytes)));
    }
    if (spec.process.size() > kMaxCommBytes) {
      return w.FailAt(item, "process " + ConfigWalker::Quote(spec.process) + " is longer than the 15 bytes the kernel keeps of a "
                          "process name: it would never match (use " + ConfigWalker::Quote(spec.process.substr(0, kMaxCommBytes)) + ")");
    }
    if (!spec.pid_file.empty() && spec.pid_file[0] != '/') {
      return w.FailAt(item, "pid_file " + ConfigWalker::Quote(spec.pid_file) + " must be an absolute path");
    }
    if (!spec.systemd_unit.empty()) {
      const std::string& u = spec.systemd_unit;
      const std::size_t dot = u.rfind('.');
      if (u.find('/') != std::string::npos || u[0] == '.' || dot == std::string::npos || dot == 0 ||
          dot + 1 == u.size()) {
        return w.FailAt(item, "systemd_unit " + ConfigWalker::Quote(u) + " must be a unit name with its type, e.g. trainer.service");
      }
    }
    workloads.push_back(std::move(spec));
    return Status::Ok();
  });
  if (st.ok() && !v.node.IsNull()) out = std::move(workloads);
  return st;
}

RDMAHD_REGISTER_CONFIG_SECTION(WorkloadsPolicy, "host.workloads", 40,
    {{"host.workloads", "`[]`"}, {"host.workloads[i].name", "required"}, {"host.workloads[i].process", ""},
     {"host.workloads[i].pid_file", ""}, {"host.workloads[i].systemd_unit", ""},
     {"host.workloads[i].device", "unset = every RDMA device"}},
    ParseWorkloads);

}  // namespace

RDMAHD_REGISTER_COLLECTOR(
    "workloads", WorkloadsCollector,
    "configured RDMA workloads: CPUs, memory per NUMA node, locked-memory limits; the daemon's own limit");

}  // namespace rdmahd
