// The "plumbing" collector (facts/plumbing_facts.h): kernel modules, /dev/infiniband device nodes,
// CPU governors of NIC-local CPUs and the IOMMU mode. Everything but the device nodes is read
// through NodeFs; the nodes are lstat()ed under NodeFs::dev_root() (--path.dev), never opened.
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <map>
#include <set>

#include "collectors/host_devices.h"
#include "common/cpu_governor.h"
#include "common/cpulist.h"
#include "common/parse.h"
#include "config/config_section.h"
#include "core/collector.h"
#include "facts/plumbing_facts.h"
#include "parsers/host_dev_parse.h"

namespace rdmahd {
namespace {

std::string Basename(std::string_view path) {
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  return std::string(path.substr(path.rfind('/') + 1));
}

// The kernel module behind an RDMA device: the module of its PCI driver (device/driver/module);
// software devices have no device/ and are known by name.
std::optional<std::string> DriverModule(const NodeFs& fs, const TopologyDevice& d, std::string& note) {
  if (!d.device_dir) {
    if (auto module = SoftwareDriverModule(d)) return module;
    note = NoPciFunctionReason(d);
    return std::nullopt;
  }
  auto module = fs.ReadLink(*d.device_dir + "/driver/module");
  if (module.ok()) return Basename(*module);
  auto driver = fs.ReadLink(*d.device_dir + "/driver");
  if (!driver.ok()) {
    note = "no driver bound to " + d.name + "'s device (" + driver.error().message + ")";
    return std::nullopt;
  }
  note = "driver " + Basename(*driver) + " of " + d.name + " is built into the kernel (no module link)";
  return std::nullopt;
}

ModuleFacts Module(const NodeFs& fs, const std::string& name, const std::string& needed_by,
                   const std::string& alternative = "") {
  ModuleFacts m;
  m.name = name;
  m.needed_by = needed_by;
  if (fs.IsDir(fs.Sys("module/" + name))) {
    m.loaded = true;
    m.evidence = "/sys/module/" + name;
  } else if (!alternative.empty() && fs.IsDir(fs.Sys(alternative))) {
    // Built in, or loaded without parameters on an old kernel: its class folder shows it works.
    m.loaded = true;
    m.evidence = "/sys/" + alternative;
  } else {
    m.evidence = "no /sys/module/" + name + (alternative.empty() ? "" : " and no /sys/" + alternative);
  }
  return m;
}

CharDeviceFacts Stat(const NodeFs& fs, const std::string& path, const std::string& device) {
  CharDeviceFacts c;
  c.path = KernelPaths(fs, path);
  c.device = device;
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    c.note = KernelPaths(fs, Error::FromErrno("stat " + path, errno).message);
    return c;
  }
  c.present = true;
  c.is_char_device = S_ISCHR(st.st_mode);
  c.mode = static_cast<std::uint32_t>(st.st_mode & 07777);
  c.uid = static_cast<std::uint32_t>(st.st_uid);
  c.gid = static_cast<std::uint32_t>(st.st_gid);
  return c;
}

// uverbsN of each device, from <sysfs>/class/infiniband_verbs/uverbsN/ibdev.
std::map<std::string, std::string> UverbsByDevice(const NodeFs& fs, HeldFiles& held) {
  std::map<std::string, std::string> out;
  const std::string dir = fs.Sys("class/infiniband_verbs");
  auto entries = fs.ListDir(dir);
  if (!entries) return out;
  for (const std::string& e : *entries) {
    if (e.rfind("uverbs", 0) != 0) continue;
    if (auto ibdev = held.Read(fs, dir + "/" + e + "/ibdev")) out[std::string(Trim(*ibdev))] = e;
  }
  return out;
}

std::optional<std::uint32_t> NumericId(const std::string& s) {
  auto v = ParseU64(s);
  if (!v || *v > 0xFFFFFFFEull) return std::nullopt;
  return static_cast<std::uint32_t>(*v);
}

// scaling_governor files are held open (one pread per CPU per scrape; a node has hundreds).
void ReadGovernors(const NodeFs& fs, const TopologyDevice& d, std::map<std::uint32_t, std::optional<std::string>>& cache,
                   HeldFiles& held, CpuGovernorFacts& g) {
  g.device = d.name;
  if (!d.device_dir) {
    g.note = "no PCI function: no local CPUs";
    return;
  }
  auto text = fs.ReadFile(*d.device_dir + "/local_cpulist");
  if (!text) {
    g.note = KernelPaths(fs, text.error().message);
    return;
  }
  g.local_cpulist = std::string(Trim(*text));
  auto cpus = ParseCpuList(*text);
  if (!cpus) {
    g.note = KernelPaths(fs, *d.device_dir + "/local_cpulist: " + cpus.error().message);
    return;
  }
  std::vector<std::uint32_t> ids;
  for (const CpuRange& r : cpus->ranges()) {
    for (std::uint32_t c = r.first; c <= r.last; ++c) ids.push_back(c);
  }
  for (std::uint32_t cpu : ids) {
    auto it = cache.find(cpu);
    if (it == cache.end()) {
      it = cache.emplace(cpu, ReadScalingGovernor(fs, cpu, &held)).first;
    }
    if (it->second) {
      ++g.cpus_by_governor[*it->second];
    } else {
      ++g.unreadable_cpus;
    }
  }
  if (g.cpus_by_governor.empty() && !cpus->empty()) {
    g.note = "no readable cpufreq/scaling_governor for the local CPUs (no cpufreq driver, e.g. in a VM)";
  }
}

// User and group lookups go through NSS (possibly LDAP or sssd): resolved again at most this often,
// not on every scrape. The kernel command line never changes while the system runs: read once.
constexpr std::chrono::seconds kAccessResolveInterval{300};
// How long a device may be listed without its uverbsN entry or node before that is a failure (they
// follow its registration and precede its removal by milliseconds; the margin covers a busy udev).
constexpr std::chrono::seconds kCharDeviceSettle{10};

class PlumbingCollector : public Collector {
 public:
  Status Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& outcome) override {
    const NodeFs& fs = ctx.fs;
    PlumbingFacts f;
    const std::vector<TopologyDevice>& devices = ctx.topology.devices;

    f.module_dir_present = fs.IsDir(fs.Sys("module"));
    f.modules.push_back(Module(fs, "ib_core", "RDMA core", "class/infiniband"));
    f.modules.push_back(Module(fs, "ib_uverbs", "verbs (/dev/infiniband/uverbsN)", "class/infiniband_verbs"));
    f.modules.push_back(Module(fs, "rdma_ucm", "rdma_cm (/dev/infiniband/rdma_cm)", "class/misc/rdma_cm"));
    std::map<std::string, std::string> drivers;  // module -> devices
    for (const TopologyDevice& d : devices) {
      // The driver is bound for the life of the device: looked up again only for a new device.
      auto look_up = [&]() -> Result<DriverLookup> {
        DriverLookup lookup;
        lookup.generation = d.generation;
        lookup.module = DriverModule(fs, d, lookup.note);
        return lookup;
      };
      auto fits = [&](const DriverLookup& l) { return l.generation == d.generation; };
      auto nothing_held = [](DriverLookup&) -> std::optional<std::string> { return std::nullopt; };
      const DriverLookup& cached = *drivers_.Read(d.name, {}, look_up, fits, nothing_held).layout;
      const std::string& note = cached.note;
      if (const auto& m = cached.module) {
        std::string& users = drivers[*m];
        users += (users.empty() ? "" : ",") + d.name;
      } else if (!note.empty()) {
        outcome.errors.push_back(note);
      }
    }
    for (const auto& [module, users] : drivers) f.modules.push_back(Module(fs, module, users));

    f.dev_root = fs.dev_root();  // as given: the one place the real root is shown
    f.dev_root_present = fs.IsDir(f.dev_root);
    if (f.dev_root_present) {
      const auto uverbs = UverbsByDevice(fs, ibdev_files_);
      const auto now = std::chrono::steady_clock::now();
      std::map<std::string, std::chrono::steady_clock::time_point> still_missing;
      for (const TopologyDevice& d : devices) {
        // ib_uverbs adds a device's uverbsN just after the device registers (and the node follows),
        // and removes it just before the device goes: either way, for a moment the device is
        // listed without it. A node missing for less than kCharDeviceSettle is not judged yet.
        // At the first collection nothing came or went under the daemon's eyes: what is missing
        // then is missing (and `rdma-healthd check`, one collection, judges it at once).
        auto first_missing = [&] {
          auto seen = uverbs_missing_since_.find(d.name);
          const auto since = seen != uverbs_missing_since_.end() ? seen->second
                             : collected_before_                  ? now
                                                                  : now - kCharDeviceSettle;
          still_missing[d.name] = since;
          return now - since < kCharDeviceSettle;
        };
        auto it = uverbs.find(d.name);
        if (it == uverbs.end()) {
          CharDeviceFacts c;
          c.device = d.name;
          // path stays empty: which uverbsN it would be is not known
          c.note = "no uverbs device in /sys/class/infiniband_verbs names " + d.name +
                   " (ib_uverbs not loaded, or the driver has no verbs)";
          c.settling = first_missing();
          f.char_devices.push_back(std::move(c));
          continue;
        }
        CharDeviceFacts c = Stat(fs, fs.Dev("infiniband/" + it->second), d.name);
        if (!c.present) c.settling = first_missing();
        f.char_devices.push_back(std::move(c));
      }
      uverbs_missing_since_ = std::move(still_missing);
      collected_before_ = true;
      f.char_devices.push_back(Stat(fs, fs.Dev("infiniband/rdma_cm"), ""));
    }
    const HostDeviceAccessPolicy& want = ctx.config.Section<HostDeviceAccessPolicy>();
    const auto now = std::chrono::steady_clock::now();
    if (!access_ || access_policy_.user != want.user || access_policy_.group != want.group ||
        now - access_at_ >= kAccessResolveInterval) {
      access_ = ResolveAccess(want, fs.asks_kernel());
      access_policy_ = want;
      access_at_ = now;
    }
    f.access = *access_;

    std::map<std::uint32_t, std::optional<std::string>> governors;
    for (const TopologyDevice& d : devices) {
      CpuGovernorFacts g;
      ReadGovernors(fs, d, governors, governor_files_, g);
      f.governors.push_back(std::move(g));
    }

    const std::string cmdline_path = fs.Proc("cmdline");
    if (!iommu_ || iommu_path_ != cmdline_path) {
      IommuFacts iommu;
      if (auto cmdline = fs.ReadFile(cmdline_path)) {
        IommuCmdline parsed = ParseIommuCmdline(*cmdline);
        iommu.cmdline_read = true;
        iommu.options = std::move(parsed.options);
        iommu.mode = std::move(parsed.mode);
        iommu_ = std::move(iommu);  // kept: it cannot change
        iommu_path_ = cmdline_path;
        f.iommu = *iommu_;
      } else {
        iommu.note = KernelPaths(fs, cmdline.error().message);  // tried again next time
        f.iommu = std::move(iommu);
      }
    } else {
      f.iommu = *iommu_;
    }
    snapshot.Put(std::move(f));
    return Status::Ok();
  }

  void Render(const Snapshot& snapshot, MetricSink& sink) const override {
    const PlumbingFacts* f = snapshot.Get<PlumbingFacts>();
    if (f == nullptr) return;
    if (f->module_dir_present) {
      auto loaded = sink.Gauge("rdma_kernel_module_loaded",
                               "1 when a kernel module RDMA needs is loaded (or built in), else 0.");
      for (const ModuleFacts& m : f->modules) loaded.Add({{"module", m.name}}, m.loaded ? 1 : 0);
    }
    if (f->dev_root_present) {
      auto present = sink.Gauge("rdma_char_device_present",
                                "1 when an RDMA character device (/dev/infiniband/uverbsN of device, rdma_cm with device \"\") exists, else 0.");
      for (const CharDeviceFacts& c : f->char_devices) {
        present.Add({{"device", c.device}, {"path", c.path}}, c.present && c.is_char_device ? 1 : 0);
      }
    }
    auto governor = sink.Gauge("rdma_cpu_governor_cpus",
                               "CPUs local to an RDMA device per cpufreq scaling governor.");
    for (const CpuGovernorFacts& g : f->governors) {
      for (const auto& [name, count] : g.cpus_by_governor) governor.Add({{"device", g.device}, {"governor", name}}, count);
    }
    if (f->iommu.cmdline_read) {
      sink.Gauge("rdma_host_iommu_info",
                 "IOMMU mode from the kernel command line (passthrough, translated, off or default) and the options.")
          .Add({{"mode", f->iommu.mode}, {"options", f->iommu.options}}, 1);
    }
  }

 private:
  std::optional<AccessIdentity> access_;
  HostDeviceAccessPolicy access_policy_;
  std::chrono::steady_clock::time_point access_at_{};
  std::optional<IommuFacts> iommu_;
  HeldFiles governor_files_;
  HeldFiles ibdev_files_;
  struct DriverLookup {
    std::uint64_t generation = 0;
    std::optional<std::string> module;
    std::string note;
  };
  LayoutCache<DriverLookup> drivers_;  // by device
  // Devices whose uverbs entry or node was missing at the last collection, and since when.
  std::map<std::string, std::chrono::steady_clock::time_point> uverbs_missing_since_;
  bool collected_before_ = false;
  std::string iommu_path_;
};

RDMAHD_REGISTER_COLLECTOR(
    "plumbing", PlumbingCollector,
    "RDMA plumbing: kernel modules, /dev/infiniband nodes, CPU governor of NIC-local CPUs, IOMMU mode");

// host.device_access: the account RDMA jobs run as (the device_access check judges the modes read here).
RDMAHD_REGISTER_CONFIG_SECTION(HostDeviceAccessPolicy, "host.device_access", 50,
    {{"host.device_access.user", "unset"}, {"host.device_access.group", "unset"}},
    [](const ConfigWalker& w, const ConfigNode& v, HostDeviceAccessPolicy& out) {
      return w.VisitMap(v, {
          {"user", [&](const ConfigNode& f) { return w.ReadOptionalString(f, out.user); }},
          {"group", [&](const ConfigNode& f) { return w.ReadOptionalString(f, out.group); }},
      });
    });

}  // namespace

AccessIdentity ResolveAccess(const HostDeviceAccessPolicy& policy, bool look_up_names) {
  AccessIdentity a;
  a.user = policy.user.value_or("");
  a.group = policy.group.value_or("");
  std::vector<char> buf(16384);
  const std::string not_looked_up = " is a name, not looked up for a captured node (this machine's accounts are not the "
                                    "node's): give the numeric id in host.device_access";
  if (!a.user.empty() && !look_up_names) {
    if (auto id = NumericId(a.user)) a.uid = id;
    else a.note = "user " + a.user + not_looked_up;
  } else if (!a.user.empty()) {
    struct passwd pw {};
    struct passwd* found = nullptr;
    const int err = ::getpwnam_r(a.user.c_str(), &pw, buf.data(), buf.size(), &found);
    if (found != nullptr) {
      a.uid = pw.pw_uid;
      std::vector<gid_t> groups(256);
      int n = static_cast<int>(groups.size());
      if (::getgrouplist(a.user.c_str(), pw.pw_gid, groups.data(), &n) < 0) n = static_cast<int>(groups.size());
      for (int i = 0; i < n; ++i) a.gids.push_back(groups[static_cast<std::size_t>(i)]);
      a.gids.push_back(pw.pw_gid);
    } else if (auto id = NumericId(a.user)) {
      a.uid = id;
    } else {
      a.note = "user " + a.user + " not found" + (err != 0 ? " (" + Error::FromErrno("getpwnam", err).message + ")" : "");
    }
  }
  if (!a.group.empty() && !look_up_names) {
    if (auto id = NumericId(a.group)) a.gids.push_back(*id);
    else a.note += (a.note.empty() ? "" : "; ") + std::string("group ") + a.group + not_looked_up;
  } else if (!a.group.empty()) {
    struct group gr {};
    struct group* found = nullptr;
    ::getgrnam_r(a.group.c_str(), &gr, buf.data(), buf.size(), &found);
    if (found != nullptr) {
      a.gids.push_back(gr.gr_gid);
    } else if (auto id = NumericId(a.group)) {
      a.gids.push_back(*id);
    } else {
      a.note += (a.note.empty() ? "" : "; ") + std::string("group ") + a.group + " not found";
    }
  }
  std::sort(a.gids.begin(), a.gids.end());
  a.gids.erase(std::unique(a.gids.begin(), a.gids.end()), a.gids.end());
  return a;
}
}  // namespace rdmahd
