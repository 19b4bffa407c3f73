#include "daemon/capture.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>
#include <sstream>
#include <vector>

#include "collectors/dcb_netlink.h"
#include "collectors/ethtool_stats.h"
#include "collectors/kernel_log.h"
#include "collectors/module_eeprom.h"
#include "common/excerpt.h"
#include "common/metric_sink.h"
#include "common/node_fs.h"
#include "common/parse.h"
#include "config/config.h"
#include "config/policies.h"
#include "core/topology.h"
#include "daemon/check_command.h"
#include "daemon/daemon.h"
#include "daemon/json_api.h"
#include "daemon/web_config.h"
#include "parsers/dcb_json.h"
#include "parsers/ethtool_stats.h"
#include "parsers/kernel_event_rules.h"
#include "parsers/kernel_log_record.h"
#include "parsers/module_eeprom.h"

namespace rdmahd {
namespace {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;

// Names never copied wherever they are: power management, write-only controls, binary or slow
// PCI resources (vpd can take seconds), module internals, and links that lead to the whole tree.
bool SkippedName(std::string_view name) {
  static const std::set<std::string_view> kSkip = {
      "power",   "uevent",  "queues",   "subsystem", "firmware_node", "of_node", "iommu",   "iommu_group",
      "rom",     "vpd",     "sections", "notes",     "holders",       "remove",  "rescan",  "reset",
      "new_id",  "remove_id", "bind",   "unbind",    "driver_override", "msi_irqs"};
  if (kSkip.count(name)) return true;
  return name.rfind("resource", 0) == 0 || name.rfind("consumer:", 0) == 0 || name.rfind("supplier:", 0) == 0;
}

// Links followed into what they point at (the rest are kept as links only): a device's PCI
// function and its driver and module, a CPU's cpufreq policy. Entries of a class folder too.
bool FollowedLinkName(std::string_view name) {
  return name == "device" || name == "driver" || name == "module" || name == "cpufreq";
}

std::string RealPath(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr) return {};
  return buf;
}

// `resolved` (a realpath) is `root` (a realpath) or below it.
bool WithinRoot(const std::string& root, const std::string& resolved) {
  return !resolved.empty() && (resolved == root || resolved.rfind(root + "/", 0) == 0);
}

std::string Dirname(const std::string& rel) {
  const std::size_t slash = rel.rfind('/');
  return slash == std::string::npos ? std::string() : rel.substr(0, slash);
}

std::string Basename(const std::string& rel) {
  const std::size_t slash = rel.rfind('/');
  return slash == std::string::npos ? rel : rel.substr(slash + 1);
}

// A whole regular file, at most `cap` bytes: refused (nullopt, `why`) when not regular or bigger.
std::optional<std::string> ReadCapped(const std::string& path, std::size_t cap, std::string& why, bool no_follow) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | (no_follow ? O_NOFOLLOW : 0));
  if (fd < 0) {
    why = std::strerror(errno);
    return std::nullopt;
  }
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    why = "not a regular file";
    return std::nullopt;
  }
  std::string out;
  char buf[16384];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      why = std::strerror(errno);
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > cap) {
      ::close(fd);
      why = "bigger than the cap of " + std::to_string(cap) + " bytes";
      return std::nullopt;
    }
  }
  ::close(fd);
  return out;
}

std::optional<std::vector<std::string>> ListNames(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return std::nullopt;
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(std::move(n));
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

// One source tree (the sysfs or procfs root, the DCB folder) copied under an archive prefix.
struct Tree {
  std::string src;   // as given (/sys, or a fixture)
  std::string real;  // its realpath
  std::string prefix;
  std::size_t file_cap = 0;
  std::set<std::string> done;  // real relative paths already copied
};

class Bundle {
 public:
  Bundle(CaptureArchiveWriter& archive, const CaptureLimits& limits, Clock::time_point deadline)
      : archive_(archive), limits_(limits), deadline_(deadline) {}

  // Adds a file if the budget allows; false (and a skip) when it does not.
  bool AddFile(const std::string& name, std::string_view data) {
    if (!Room(name, data.size())) return false;
    if (Status s = archive_.AddFile(name, data); !s.ok()) return Fail(s);
    bytes_ += data.size();
    ++files_;
    ++entries_;
    return true;
  }
  void AddDir(const std::string& name) {
    if (!Room(name, 0)) return;
    if (Status s = archive_.AddDir(name); !s.ok()) Fail(s);
    ++folders_;
    ++entries_;
  }
  void AddLink(const std::string& name, const std::string& target) {
    if (!Room(name, 0)) return;
    if (Status s = archive_.AddSymlink(name, target); !s.ok()) Fail(s);
    ++links_;
    ++entries_;
  }
  void Skip(const std::string& path, const std::string& reason) {
    ++skipped_by_reason_[reason];
    if (skipped_.size() < limits_.manifest_skips) {
      skipped_.push_back({{"path", path}, {"reason", reason}});
    } else {
      ++skipped_more_;
    }
  }
  void Note(std::string note) { notes_.push_back(std::move(note)); }
  bool out_of_time() const { return Clock::now() > deadline_; }
  int tree_depth() const { return limits_.tree_depth; }
  const Status& error() const { return error_; }

  // Copies `rel` of `tree` (a file, folder or link) to the archive; folders `depth` levels deep.
  // `in_class`: `rel` is an entry of a class folder, followed when it is a link.
  void Copy(Tree& tree, const std::string& rel, int depth, bool in_class = false);

  Json Manifest() const {
    Json m;
    // Regular files only; folders and links counted apart; entries are all three (the cap's unit).
    // manifest.json itself, written last, is not counted.
    m["files"] = files_;
    m["folders"] = folders_;
    m["links"] = links_;
    m["entries"] = entries_;
    m["bytes"] = bytes_;
    m["skipped"] = skipped_;
    m["skipped_more"] = skipped_more_;
    m["skipped_by_reason"] = skipped_by_reason_;
    m["notes"] = notes_;
    // Complete: no limit of the capture's own cut it short (files the node would not let be read
    // are skipped, named, and do not make it incomplete).
    m["complete"] = cut_by_.empty();
    m["cut_by"] = cut_by_;
    return m;
  }

 private:
  bool Room(const std::string& name, std::size_t size) {
    if (!error_.ok()) return false;
    if (out_of_time()) {
      cut_by_.insert("seconds");
      Skip(name, "the capture's time budget was spent");
      return false;
    }
    if (entries_ + 1 > limits_.entries) {
      cut_by_.insert("entries");
      Skip(name, "over the cap of " + std::to_string(limits_.entries) + " entries (files, folders and links)");
      return false;
    }
    if (bytes_ + size > limits_.total_bytes) {
      cut_by_.insert("total_bytes");
      Skip(name, "over the total cap of " + std::to_string(limits_.total_bytes) + " bytes");
      return false;
    }
    return true;
  }
  bool Fail(const Status& s) {
    if (error_.ok()) error_ = s;
    return false;
  }

  CaptureArchiveWriter& archive_;
  const CaptureLimits& limits_;
  Clock::time_point deadline_;
  std::uint64_t files_ = 0, folders_ = 0, links_ = 0, entries_ = 0, bytes_ = 0, skipped_more_ = 0;
  Json skipped_ = Json::array();
  std::map<std::string, std::uint64_t> skipped_by_reason_;
  std::set<std::string> cut_by_;  // the limits (keys of "limits") the capture stopped at
  std::vector<std::string> notes_;
  Status error_ = Status::Ok();
};

void Bundle::Copy(Tree& tree, const std::string& rel_in, int depth, bool in_class) {
  if (!error_.ok() || out_of_time()) return;
  // The path as it really is: its folder resolved (a seed such as devices/system/cpu/cpu0/cpufreq
  // may lie under a link), the leaf kept, and all of it inside the root.
  std::string rel = rel_in;
  if (const std::string dir = Dirname(rel_in); !dir.empty()) {
    const std::string real_dir = RealPath(tree.src + "/" + dir);
    if (real_dir.empty()) return;  // not there: nothing to copy
    if (!WithinRoot(tree.real, real_dir)) {
      Skip(tree.prefix + "/" + rel_in, "its folder resolves out of " + tree.src);
      return;
    }
    rel = (real_dir == tree.real ? "" : real_dir.substr(tree.real.size() + 1) + "/") + Basename(rel_in);
  }
  if (!tree.done.insert(rel).second) return;
  const std::string path = tree.src + "/" + rel;
  const std::string name = tree.prefix + "/" + rel;
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0) return;  // gone, or never there
  if (S_ISLNK(st.st_mode)) {
    char buf[PATH_MAX];
    const ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
    if (n <= 0) {
      Skip(name, "unreadable link");
      return;
    }
    const std::string target(buf, static_cast<std::size_t>(n));
    // The rule `check --capture` applies (a relative target, ".." only leading, no deeper than the
    // link), and the link's real resolution inside the root.
    if (!LinkTargetStaysInside(rel, target)) {
      Skip(name, "a link whose target is absolute or climbs out of the capture");
      return;
    }
    const std::string resolved = RealPath(path);
    if (!resolved.empty() && !WithinRoot(tree.real, resolved)) {
      Skip(name, "a link that resolves out of " + tree.src);
      return;
    }
    AddLink(name, target);
    if (!resolved.empty() && resolved != tree.real && (in_class || FollowedLinkName(Basename(rel)))) {
      Copy(tree, resolved.substr(tree.real.size() + 1), limits_.tree_depth);
    }
    return;
  }
  if (S_ISDIR(st.st_mode)) {
    AddDir(name);
    if (depth <= 0) return;
    auto names = ListNames(path);
    if (!names) {
      Skip(name, std::string("cannot list: ") + std::strerror(errno));
      return;
    }
    for (const std::string& child : *names) {
      if (SkippedName(child)) continue;
      Copy(tree, rel + "/" + child, depth - 1);
    }
    return;
  }
  if (!S_ISREG(st.st_mode)) {
    Skip(name, S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device node (a bundle carries none)"
                                                          : "not a regular file, a folder or a link");
    return;
  }
  std::string why;
  auto content = ReadCapped(path, tree.file_cap, why, /*no_follow=*/true);
  if (!content) {
    Skip(name, why);
    return;
  }
  AddFile(name, *content);
}

// Copies a class folder: its entries, each followed to the device it names.
void CopyClass(Bundle& bundle, Tree& tree, const std::string& rel) {
  bundle.Copy(tree, rel, 0);
  auto names = ListNames(tree.src + "/" + rel);
  if (!names) return;
  // An entry is a link to the device (sysfs), or on a generated tree the device folder itself.
  for (const std::string& n : *names) bundle.Copy(tree, rel + "/" + n, bundle.tree_depth(), /*in_class=*/true);
}

// ---- The kernel, asked directly (live sysfs only) -----------------------------------------------

}  // namespace





namespace {

void CaptureNetdevsLive(Bundle& bundle, const std::vector<std::string>& netdevs) {
  DcbNetlinkReader dcb(std::make_unique<MnlDcbTransport>());
  EthtoolReader ethtool(std::make_unique<SocketEthtoolIoctl>());
  SocketEthtoolIoctl raw;
  for (const std::string& n : netdevs) {
    if (bundle.out_of_time()) break;
    const std::string base = "dcb/" + n + "/";
    if (auto state = dcb.Read(n); !state.ok()) {
      bundle.Skip(base + "pfc.json", "DCB netlink: " + state.error().message);
    } else if (!state->supported) {
      bundle.AddFile(base + "pfc.json", "unsupported\n");
    } else {
      if (state->pfc) bundle.AddFile(base + "pfc.json", DcbPfcJsonOf(*state->pfc));
      else bundle.Skip(base + "pfc.json", "the kernel's DCB answer has no PFC attribute");
      if (state->app) bundle.AddFile(base + "app.json", DcbAppJsonOf(*state->app));
      if (state->app_trust || state->dcbx) {
        bundle.Note(n + ": the APP trust order and DCBX mode have no `dcb -j` file the daemon reads; "
                        "they are unknown when the bundle is judged");
      }
    }
    if (auto stats = ethtool.ReadStats(n); stats.ok()) {
      bundle.AddFile(base + "ethtool-S.txt", EthtoolStatsTextOf(*stats));
    } else {
      bundle.Skip(base + "ethtool-S.txt", stats.error().message);
    }
    if (auto pause = ethtool.ReadPause(n); pause.ok() && *pause) {
      bundle.AddFile(base + "ethtool-a.txt", EthtoolPauseTextOf(n, **pause));
    } else {
      bundle.Skip(base + "ethtool-a.txt", pause.ok() ? "the driver reports no pause parameters" : pause.error().message);
    }
    if (auto eeprom = ReadModuleEepromIoctl(raw, n); eeprom.ok()) {
      bundle.AddFile(base + "module-eeprom.bin",
                     std::string_view(reinterpret_cast<const char*>(eeprom->data()), eeprom->size()));
    } else {
      bundle.Skip(base + "module-eeprom.bin", "module EEPROM not readable: " + eeprom.error().message);
    }
  }
}

// A kernel message of an RDMA driver or the RDMA core: it starts with the name the driver logs
// under ("mlx5_core 0000:3b:00.0: ...", "infiniband mlx5_0: ...", "rdma_rxe: ...").
bool MentionsRdmaDriver(std::string_view message) {
  static constexpr std::string_view kNames[] = {
      "mlx5_core", "mlx5_ib", "mlx4_core", "mlx4_ib", "mlx4_en", "infiniband", "rdma_rxe", "rdma_cm",
      "ib_core",   "ib_uverbs", "bnxt_en",  "bnxt_re", "irdma",   "ice",        "efa",      "siw",
      "hns_roce",  "qedr",     "ionic",     "erdma",   "mana_ib", "vmw_pvrdma"};
  return std::any_of(std::begin(kNames), std::end(kNames), [&](std::string_view n) {
    return message.size() > n.size() && message.substr(0, n.size()) == n &&
           (message[n.size()] == ' ' || message[n.size()] == ':');
  });
}

// kernel-log-rdma.txt (for people, not judged): every RDMA driver line the ring holds.
// kernel-log.txt (judged): the kernel's records of the last kernel_log.look_back that the NIC rules (built-in
// and the config's) match, as
// /dev/kmsg gives them, then a marker record at the capture's time (a saved log's last record is
// its "now"). Only kernel records (facility 0).
void CaptureKernelLog(Bundle& bundle, const CaptureLimits& limits, const KernelLogPolicy& policy) {
  const int fd = ::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    bundle.Skip("kernel-log.txt", std::string("/dev/kmsg: ") + std::strerror(errno) +
                                      (errno == EPERM ? " (reading it needs CAP_SYSLOG)" : ""));
    return;
  }
  std::vector<KernelEventRule> rules = BuiltinKernelEventRules();
  rules.insert(rules.end(), policy.rules.begin(), policy.rules.end());
  auto classifier = KernelEventClassifier::Create(std::move(rules));
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  const std::uint64_t now_us = static_cast<std::uint64_t>(now.tv_sec) * 1000000u +
                               static_cast<std::uint64_t>(now.tv_nsec / 1000);
  const std::uint64_t look_back_us =
      static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(policy.look_back).count());
  std::string out, history;
  bool history_cut = false;
  std::uint64_t last_seq = 0, kept = 0;
  std::vector<char> buf(8192);
  bool cut = false;
  for (int reads = 0; reads < 1000000; ++reads) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EPIPE || errno == EINTR) continue;  // overwritten by the ring: go on
      break;                                          // EAGAIN: the end
    }
    if (n == 0) break;
    const std::string_view raw(buf.data(), static_cast<std::size_t>(n));
    auto record = ParseKmsgRecord(raw);
    if (!record.ok()) continue;
    if (record->sequence) last_seq = *record->sequence;
    if (record->facility.value_or(0) != 0) continue;
    const bool event = classifier.ok() && classifier->Classify(*record).has_value();
    // For people: every RDMA driver line the ring still holds, whatever its age.
    if (event || MentionsRdmaDriver(record->message)) {
      if (history.size() + raw.size() + 1 <= limits.kernel_log_bytes) {
        history.append(raw);
        if (history.back() != '\n') history += '\n';
      } else {
        history_cut = true;
      }
    }
    if (!event || !record->monotonic_us || *record->monotonic_us + look_back_us < now_us) continue;
    if (out.size() + raw.size() + 1 > limits.kernel_log_bytes) {
      cut = true;
      break;
    }
    out.append(raw);
    if (out.back() != '\n') out += '\n';
    ++kept;
  }
  ::close(fd);
  if (cut) bundle.Note("kernel-log.txt: cut at " + std::to_string(limits.kernel_log_bytes) + " bytes");
  if (history_cut) bundle.Note("kernel-log-rdma.txt: cut at " + std::to_string(limits.kernel_log_bytes) + " bytes");
  bundle.AddFile("kernel-log-rdma.txt", history);
  out += "6," + std::to_string(last_seq + 1) + "," + std::to_string(now_us) +
         ",-;rdma-healthd capture: end of the saved kernel log (" + std::to_string(kept) + " records)\n";
  bundle.AddFile("kernel-log.txt", out);
}

// ---- procfs -------------------------------------------------------------------------------------

void CapturePid(Bundle& bundle, Tree& proc, int pid) {
  const std::string p = std::to_string(pid);
  for (const char* f : {"status", "limits", "numa_maps"}) bundle.Copy(proc, p + "/" + f, 0);
}

void CaptureProc(Bundle& bundle, Tree& proc, Tree& sys, const Config& config) {
  for (const char* f : {"meminfo", "cmdline", "cpuinfo", "version", "sys/kernel/numa_balancing"}) {
    bundle.Copy(proc, f, 0);
  }
  // This process's own limits stand for the daemon's (the daemon reads /proc/self on a capture).
  for (const char* f : {"status", "limits"}) {
    std::string why;
    if (auto text = ReadCapped(proc.src + "/self/" + f, proc.file_cap, why, false)) {
      bundle.AddFile("proc/self/" + std::string(f), *text);
    }
  }
  const auto& specs = config.Section<WorkloadsPolicy>().workloads;
  std::set<std::string> wanted_comms;
  for (const WorkloadSpec& w : specs) {
    if (!w.process.empty()) wanted_comms.insert(w.process);
    if (!w.pid_file.empty()) {
      bundle.Note("workload " + w.name + ": its pid file " + w.pid_file +
                  " is outside /sys and /proc and is not captured (judging the bundle looks it up where it runs)");
    }
    if (!w.systemd_unit.empty()) {
      const std::string rel = "system.slice/" + w.systemd_unit + "/cgroup.procs";
      for (const char* h : {"fs/cgroup/", "fs/cgroup/unified/", "fs/cgroup/systemd/"}) {
        bundle.Copy(sys, h + rel, 0);
        std::string why;
        if (auto text = ReadCapped(sys.src + "/" + h + rel, 1u << 20, why, true)) {
          std::string_view t = *text;
          while (!t.empty()) {
            const std::size_t nl = t.find('\n');
            if (auto pid = ParseU64(Trim(t.substr(0, nl))); pid && *pid < (1u << 22)) {
              CapturePid(bundle, proc, static_cast<int>(*pid));
            }
            t = nl == std::string_view::npos ? std::string_view() : t.substr(nl + 1);
          }
        }
      }
    }
  }
  auto names = ListNames(proc.src);
  if (!names) {
    bundle.Skip("proc", "cannot list " + proc.src);
    return;
  }
  for (const std::string& n : *names) {
    if (n.empty() || !std::all_of(n.begin(), n.end(), [](char c) { return c >= '0' && c <= '9'; })) continue;
    if (bundle.out_of_time()) break;
    bundle.Copy(proc, n + "/comm", 0);
    if (wanted_comms.empty()) continue;
    std::string why;
    auto comm = ReadCapped(proc.src + "/" + n + "/comm", 256, why, true);
    if (!comm) continue;
    std::string_view c = *comm;
    if (!c.empty() && c.back() == '\n') c.remove_suffix(1);
    const auto pid = ParseU64(n);
    if (pid && *pid < (1u << 22) && wanted_comms.count(std::string(c))) CapturePid(bundle, proc, static_cast<int>(*pid));
  }
}

// ---- sysfs --------------------------------------------------------------------------------------

void CaptureSys(Bundle& bundle, Tree& sys) {
  for (const char* cls : {"class/infiniband", "class/infiniband_verbs", "class/net"}) CopyClass(bundle, sys, cls);
  // rdma_ucm built in: its misc device stands for the module (plumbing's kernel_modules).
  bundle.Copy(sys, "class/misc/rdma_cm", bundle.tree_depth(), /*in_class=*/true);
  for (const char* dir : {"devices/system/node", "kernel/mm/hugepages", "kernel/mm/transparent_hugepage",
                          "kernel/config/rdma_cm"}) {
    bundle.Copy(sys, dir, bundle.out_of_time() ? 0 : 6);
  }
  // CPUs: the cpufreq policy of each (a link followed), and the online/possible lists.
  if (auto names = ListNames(sys.src + "/devices/system/cpu")) {
    for (const std::string& n : *names) {
      if (n.rfind("cpu", 0) == 0 && n.size() > 3 && std::isdigit(static_cast<unsigned char>(n[3]))) {
        bundle.Copy(sys, "devices/system/cpu/" + n + "/cpufreq", 2);
      } else if (n == "online" || n == "possible" || n == "present") {
        bundle.Copy(sys, "devices/system/cpu/" + n, 0);
      }
    }
  }
  // Modules: every loaded one's folder and top-level files (refcnt, version, initstate), so the
  // plumbing collector sees what was loaded; drivers reached through device/driver/module above
  // are copied deeper.
  if (auto names = ListNames(sys.src + "/module")) {
    for (const std::string& n : *names) bundle.Copy(sys, "module/" + n, 1);
  }
}

std::string Hostname() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "node";
  std::string h;
  for (char c : std::string(buf)) h += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.') ? c : '_';
  return h.empty() ? "node" : h;
}

// Whose kernel and name the captured tree shows. The live /sys: this machine's (uname). Another
// tree: only what that tree's own procfs says (sys/kernel/osrelease, version, hostname, else the
// release in proc/version), never this machine's; null when it says nothing.
struct TreeIdentity {
  Json kernel_release, kernel_version, machine, hostname;
  std::string source;
};

// A one-line file of the tree (hostile: capped, printable ASCII only, else nothing).
Json TreeLine(const std::string& root_real, const std::string& path) {
  if (!WithinRoot(root_real, RealPath(path))) return nullptr;  // a link out of the tree is not its word
  std::string why;
  auto text = ReadCapped(path, 256, why, /*no_follow=*/true);
  if (!text) return nullptr;
  std::string_view t = Trim(*text);
  if (t.empty() || !std::all_of(t.begin(), t.end(), [](char c) { return c >= 0x20 && c < 0x7f; })) return nullptr;
  return std::string(t);
}

TreeIdentity IdentityOf(const Options& options, bool live) {
  TreeIdentity id;
  id.kernel_release = id.kernel_version = id.machine = id.hostname = nullptr;
  if (live) {
    utsname u{};
    ::uname(&u);
    id.kernel_release = u.release;
    id.kernel_version = u.version;
    id.machine = u.machine;
    id.hostname = Hostname();
    id.source = "uname: the live node";
    return id;
  }
  if (NodeFs::IsLiveProcfsRoot(options.procfs)) {
    id.source = "unknown: --path.sysfs is not the live /sys and --path.procfs is this machine's /proc, whose "
                "kernel is not the tree's";
    return id;
  }
  const std::string proc = options.procfs;
  const std::string real = RealPath(proc);
  if (real.empty()) {
    id.source = "unknown: --path.procfs " + proc + " does not resolve";
    return id;
  }
  id.kernel_release = TreeLine(real, proc + "/sys/kernel/osrelease");
  id.kernel_version = TreeLine(real, proc + "/sys/kernel/version");
  id.hostname = TreeLine(real, proc + "/sys/kernel/hostname");
  if (id.kernel_release.is_null()) {
    // "Linux version 6.8.0-45-generic (buildd@...) ...": the third word.
    const Json version = TreeLine(real, proc + "/version");
    if (version.is_string()) {
      const std::string v = version.get<std::string>();
      constexpr std::string_view kHead = "Linux version ";
      if (v.rfind(kHead, 0) == 0) {
        const std::string release = v.substr(kHead.size(), v.find(' ', kHead.size()) - kHead.size());
        if (!release.empty()) id.kernel_release = release;
      }
    }
  }
  id.source = id.kernel_release.is_null()
                  ? "unknown: the tree's procfs (" + proc + ") has no sys/kernel/osrelease or version"
                  : "the tree's procfs (" + proc + ")";
  return id;
}

bool IsSecretKey(std::string key) {
  std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
  static const std::set<std::string> kSecret = {"key_file", "password",     "password_file", "secret",
                                                "token",    "bearer_token", "credentials"};
  return kSecret.count(key) > 0;
}

void Redact(YAML::Node node) {
  if (node.IsMap()) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      const std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string();
      if (key == "basic_auth_users" && it->second.IsMap()) {
        for (auto u = it->second.begin(); u != it->second.end(); ++u) u->second = "<redacted>";
      } else if (IsSecretKey(key) && !it->second.IsNull()) {
        it->second = "<redacted>";
      } else {
        Redact(it->second);
      }
    }
  } else if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i) Redact(node[i]);
  }
}

// config/config.yaml: the file only when it loads as the daemon's own config (whose schema refuses
// every key it does not know, so policy rides along and nothing else), with its secrets redacted.
void CaptureDaemonConfig(Bundle& bundle, const std::string& path, const CaptureLimits& limits) {
  constexpr const char* kMember = "config/config.yaml";
  if (path.empty()) {
    bundle.Note(std::string(kMember) + ": none given (the built-in defaults)");
    return;
  }
  auto text = ReadRegularFile(path, limits.document_bytes);
  if (!text) {
    bundle.Skip(kMember, text.error().message);
    return;
  }
  if (auto parsed = ParseConfig(*text, path, RegisteredPluginNames()); !parsed) {
    bundle.Skip(kMember, "left out: it does not load as rdma-healthd's config: " + parsed.error().message);
    return;
  }
  auto redacted = RedactConfigYaml(*text);
  if (!redacted) {
    bundle.Skip(kMember, redacted.error().message);
    return;
  }
  bundle.AddFile(kMember, *redacted);
}

// config/web-config.yaml: never the file; the settings the daemon loads from it, written anew with
// no secret (WebConfigSettingsYaml). A file that does not load as a web config is left out.
void CaptureWebConfig(Bundle& bundle, const std::string& path) {
  constexpr const char* kMember = "config/web-config.yaml";
  auto web = LoadWebConfigFile(path);
  if (!web) {
    bundle.Skip(kMember, "left out: it does not load as a web config: " + web.error().message);
    return;
  }
  bundle.AddFile(kMember, WebConfigSettingsYaml(*web));
}

// kernel-log.txt from --path.kmsg: the lines that are kernel records in the file's own format (with
// a /dev/kmsg record's KEY=VALUE lines), nothing else. A file with no such line (a log without any
// prefix, or any other file named by mistake or on purpose) cannot be told from other text: left out.
void CaptureSavedKernelLog(Bundle& bundle, const std::string& path, const CaptureLimits& limits) {
  constexpr const char* kMember = "kernel-log.txt";
  std::string why;
  std::optional<std::string> text = ReadCapped(path, limits.kernel_log_bytes, why, false);
  if (!text) {
    bundle.Skip(kMember, path + ": " + why);
    return;
  }
  const SavedLogFormat format = DetectSavedLogFormat(std::string_view(*text).substr(0, 64 << 10));
  std::string out;
  std::uint64_t kept = 0, left_out = 0;
  bool in_record = false;  // the last line kept was a /dev/kmsg record: its KEY=VALUE lines follow
  std::string_view rest = *text;
  while (!rest.empty()) {
    const std::size_t nl = rest.find('\n');
    const std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
    if (line.empty()) continue;
    KernelLogRecord dict;
    const bool dict_line = format == SavedLogFormat::kKmsg && in_record && AddKmsgDictLine(line, dict);
    if (dict_line || HasSavedLogPrefix(line, format)) {
      out.append(line).push_back('\n');
      kept += !dict_line;
      in_record = format == SavedLogFormat::kKmsg;
    } else {
      ++left_out;
      in_record = false;
    }
  }
  if (kept == 0) {
    bundle.Skip(kMember, path + ": left out: no line is a kernel log record with its prefix (dmesg, dmesg -r, dmesg -T, "
                             "journalctl -k, a copy of /dev/kmsg); a log without one cannot be told from any other file");
    return;
  }
  if (bundle.AddFile(kMember, out) && left_out > 0) {
    bundle.Note(std::string(kMember) + ": " + std::to_string(left_out) + " lines of --path.kmsg that are not " +
                std::string(SavedLogFormatName(format)) + " records left out");
  }
}

// A name the kernel could give a netdev (dev_valid_name): 1-15 bytes, not . or .., no '/', ':' or space.
bool IsNetdevName(std::string_view n) {
  if (n.empty() || n.size() > 15 || n == "." || n == "..") return false;
  return std::none_of(n.begin(), n.end(), [](unsigned char c) { return c == '/' || c == ':' || std::isspace(c) || c < 0x20; });
}

// dcb/ from --path.dcb: the files the daemon reads there (collectors/dcb_capture.h), each only when
// it parses as its kind, and written back from what was parsed the way the live capture writes
// them; the module EEPROM (binary) only when it decodes. Nothing else in the folder is carried.
void CaptureDcbFolder(Bundle& bundle, const std::string& dir, const CaptureLimits& limits) {
  const std::string real = RealPath(dir);
  std::optional<std::vector<std::string>> names = real.empty() ? std::nullopt : ListNames(dir);
  if (!names) {
    bundle.Skip("dcb", "--path.dcb " + dir + " is not a readable folder");
    return;
  }
  struct Kind {
    const char* file;
    const char* what;
  };
  static constexpr Kind kKinds[] = {{"pfc.json", "`dcb -j pfc show` output"},
                                    {"app.json", "`dcb -j app show` output"},
                                    {"ethtool-S.txt", "`ethtool -S` output"},
                                    {"ethtool-a.txt", "`ethtool -a` output"},
                                    {kModuleEepromCaptureFile, "a module EEPROM dump"}};
  std::set<std::string> known;
  for (const Kind& k : kKinds) known.insert(k.file);
  std::uint64_t other = 0;
  for (const std::string& n : *names) {
    if (bundle.out_of_time()) break;
    const std::string folder = dir + "/" + n;
    struct stat st{};
    if (!IsNetdevName(n) || ::lstat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || !ResolvesInside(real, folder)) {
      ++other;
      continue;
    }
    auto inside = ListNames(folder);
    if (!inside) continue;
    for (const Kind& k : kKinds) {
      const std::string path = folder + "/" + k.file;
      if (::lstat(path.c_str(), &st) != 0) continue;  // every file is optional
      const std::string member = "dcb/" + n + "/" + k.file;
      const bool eeprom = std::string_view(k.file) == kModuleEepromCaptureFile;
      std::string why;
      auto text = ReadCapped(path, eeprom ? kMaxModuleEepromDumpBytes : limits.proc_file_bytes, why, true);
      if (!text) {
        bundle.Skip(member, why);
        continue;
      }
      std::optional<std::string> written;  // what the bundle carries: the parsed content, written anew
      std::string problem;
      const std::string_view trimmed = Trim(*text);
      if (text->empty()) {
        written = std::string();  // empty is unknown to the daemon, and says so in the bundle too
      } else if (std::string_view(k.file) == "pfc.json") {
        if (trimmed == "unsupported") written = "unsupported\n";
        else if (auto pfc = ParseDcbPfcJson(*text)) written = DcbPfcJsonOf(*pfc);
        else problem = pfc.error().message;
      } else if (std::string_view(k.file) == "app.json") {
        if (auto app = ParseDcbAppJson(*text)) written = DcbAppJsonOf(*app);
        else problem = app.error().message;
      } else if (std::string_view(k.file) == "ethtool-S.txt") {
        const EthtoolStatsText stats = ParseEthtoolStatsText(*text);
        if (!stats.stats.empty()) written = EthtoolStatsTextOf(stats.stats);
        else problem = "no \"name: value\" statistic";
      } else if (std::string_view(k.file) == "ethtool-a.txt") {
        if (auto pause = ParseEthtoolPauseText(*text)) written = EthtoolPauseTextOf(n, *pause);
        else problem = pause.error().message;
      } else {
        const auto* bytes = reinterpret_cast<const std::uint8_t*>(text->data());
        auto pages = SplitModuleEepromDump({bytes, text->size()});
        auto dom = pages ? DecodeModuleEeprom(*pages) : Result<ModuleDom>(pages.error());
        if (dom) written = std::move(*text);
        else problem = dom.error().message;
      }
      if (written) bundle.AddFile(member, *written);
      else bundle.Skip(member, "left out: not " + std::string(k.what) + " (" + problem + ")");
    }
    other += static_cast<std::uint64_t>(
        std::count_if(inside->begin(), inside->end(), [&](const std::string& f) { return known.count(f) == 0; }));
  }
  std::string note = "dcb/: the files the daemon reads, each as parsed, from --path.dcb " + dir;
  if (other > 0) note += "; " + std::to_string(other) + " other entries there left out";
  bundle.Note(note);
}

}  // namespace

bool ResolvesInside(const std::string& root_real, const std::string& path) {
  return WithinRoot(root_real, RealPath(path));
}

Result<std::string> RedactConfigYaml(std::string_view text) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception&) {
    return Error{"not valid YAML: left out, as it cannot be redacted", EINVAL};
  }
  Redact(root);
  YAML::Emitter out;
  out << root;
  if (!out.good()) return Error{"cannot write the redacted YAML: left out", EINVAL};
  return std::string(out.c_str()) + "\n";
}

std::string DefaultCaptureName() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
  return "rdma-healthd-capture-" + Hostname() + "-" + stamp + ".tar.gz";
}

int RunCaptureCommand(const Options& options, CollectionEngine& engine, std::ostream& out, std::ostream& err) {
  const CaptureLimits limits;
  const auto started = Clock::now();
  const auto deadline = started + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(options.capture_timeout_s));
  auto config = LoadEffectiveConfig(options);
  if (!config.ok()) {
    err << "rdma-healthd: " << config.error().message << "\n";
    return kExitCouldNotRun;
  }
  const std::string output = options.capture_output.empty() ? DefaultCaptureName() : options.capture_output;
  auto archive = CaptureArchiveWriter::Create(output, static_cast<std::int64_t>(std::time(nullptr)));
  if (!archive.ok()) {
    err << "rdma-healthd: " << archive.error().message << "\n";
    return kExitCouldNotRun;
  }
  Bundle bundle(**archive, limits, deadline);

  // One collection first: its verdicts and metrics are the node's, and its topology names the
  // RoCE netdevs whose DCB and driver state is captured.
  std::shared_ptr<const Report> report = engine.Collect(*config);
  std::vector<std::string> problems;
  if (auto p = SysfsRootProblem(*report, engine.fs())) problems.push_back(std::move(*p));
  const int code = CheckExitCode(*report, false, problems);
  bundle.AddFile("check.json", ChecksDocument(*report, code, problems));
  MetricSink sink;
  (void)engine.Render(*report, sink);
  const std::string metrics = sink.Serialize();
  if (metrics.size() <= limits.document_bytes) bundle.AddFile("metrics.txt", metrics);
  else bundle.Skip("metrics.txt", "bigger than " + std::to_string(limits.document_bytes) + " bytes");

  Tree sys{options.sysfs, RealPath(options.sysfs), "sys", limits.sysfs_file_bytes, {}};
  Tree proc{options.procfs, RealPath(options.procfs), "proc", limits.proc_file_bytes, {}};
  if (sys.real.empty()) bundle.Skip("sys", options.sysfs + " does not resolve");
  else CaptureSys(bundle, sys);
  if (proc.real.empty()) bundle.Skip("proc", options.procfs + " does not resolve");
  else CaptureProc(bundle, proc, sys, **config);

  const bool live = engine.fs().asks_kernel();
  const Topology* topology = report->snapshot.Get<Topology>();
  const std::vector<std::string> netdevs = topology ? topology->Netdevs() : std::vector<std::string>{};
  if (!options.dcb_dir.empty()) {
    CaptureDcbFolder(bundle, options.dcb_dir, limits);
  } else if (live) {
    CaptureNetdevsLive(bundle, netdevs);
  } else {
    bundle.Note("dcb/: not captured: on a tree that is not the live /sys the kernel is not asked, and no "
                "--path.dcb was given");
  }
  // Device nodes (device_access): a bundle carries no device files (`check --capture` refuses them),
  // so char devices are skipped, named in the manifest; anything else there (a generated tree's
  // stand-ins) is copied as it is.
  const std::string dev_root = engine.fs().dev_root();
  // On a live node there is nothing but device nodes there: no dev/ folder at all, so that the
  // bundle judged elsewhere says device_access is unknown rather than that the nodes are missing.
  if (live) {
    bundle.Note("dev/: device nodes are not carried: device_access is unknown when the bundle is judged");
  } else if (Tree dev{dev_root, RealPath(dev_root), "dev", limits.sysfs_file_bytes, {}}; !dev.real.empty()) {
    bundle.Copy(dev, "infiniband", 1);
  }
  if (!options.kmsg.empty()) {
    CaptureSavedKernelLog(bundle, options.kmsg, limits);
  } else if (live) {
    CaptureKernelLog(bundle, limits, (*config)->Section<KernelLogPolicy>());
  } else {
    bundle.Note("kernel-log.txt: not captured (a tree that is not the live /sys, and no --path.kmsg)");
  }
  CaptureDaemonConfig(bundle, options.config_file, limits);
  if (!options.web_config_file.empty()) CaptureWebConfig(bundle, options.web_config_file);

  Json manifest = bundle.Manifest();
  manifest["format"] = "rdma-healthd-capture";
  manifest["format_version"] = 1;
  manifest["created_unix"] = static_cast<std::int64_t>(std::time(nullptr));
  manifest["seconds"] = std::chrono::duration<double>(Clock::now() - started).count();
  const TreeIdentity node = IdentityOf(options, live);
  manifest["versions"] = {{"rdma_healthd", RDMAHD_VERSION},
                          {"kernel_release", node.kernel_release},
                          {"kernel_version", node.kernel_version},
                          {"machine", node.machine}};
  manifest["kernel_source"] = node.source;
  manifest["hostname"] = node.hostname;
  manifest["captured_on"] = Hostname();
  manifest["live"] = live;
  manifest["sources"] = {{"sysfs", options.sysfs},   {"procfs", options.procfs},
                         {"dcb", options.dcb_dir},   {"kmsg", options.kmsg},
                         {"config", options.config_file}, {"web_config", options.web_config_file}};
  manifest["node_verdict_exit_code"] = code;
  manifest["limits"] = {{"sysfs_file_bytes", limits.sysfs_file_bytes}, {"proc_file_bytes", limits.proc_file_bytes},
                        {"kernel_log_bytes", limits.kernel_log_bytes}, {"document_bytes", limits.document_bytes},
                        {"total_bytes", limits.total_bytes},           {"entries", limits.entries},
                        {"seconds", options.capture_timeout_s}};
  const std::string manifest_text = manifest.dump(2, ' ', true, Json::error_handler_t::replace) + "\n";
  if (Status s = (*archive)->AddFile("manifest.json", manifest_text); !s.ok()) {
    err << "rdma-healthd: " << s.error().message << "\n";
    return kExitCouldNotRun;
  }
  if (!bundle.error().ok()) {
    err << "rdma-healthd: " << bundle.error().error().message << "\n";
    return kExitCouldNotRun;
  }
  if (Status s = (*archive)->Finish(); !s.ok()) {
    err << "rdma-healthd: " << s.error().message << "\n";
    return kExitCouldNotRun;
  }
  out << "wrote " << TerminalText(output) << ": " << manifest["files"].get<std::uint64_t>() << " files, "
      << manifest["bytes"].get<std::uint64_t>() << " bytes uncompressed, "
      << manifest["skipped"].size() + manifest["skipped_more"].get<std::uint64_t>() << " skipped (manifest.json says why)\n";
  return kExitOk;
}

}  // namespace rdmahd
