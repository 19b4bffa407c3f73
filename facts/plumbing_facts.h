// Facts of the "plumbing" collector: what must be in place between an RDMA device and a user
// process: kernel modules (/sys/module), the character devices of /dev/infiniband (mode, owner),
// the CPU frequency governor of the CPUs local to each NIC, and the IOMMU mode the kernel was
// booted with (/proc/cmdline). Data only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace rdmahd {

struct ModuleFacts {
  std::string name;     // ib_core, ib_uverbs, rdma_ucm, mlx5_core, rdma_rxe, ...
  std::string needed_by;  // "RDMA core", "verbs", "rdma_cm", or the device needing the driver
  bool loaded = false;  // /sys/module/<name> exists (or the kernel shows the module's class)
  std::string evidence;  // what showed it ("/sys/module/ib_uverbs", "/sys/class/infiniband_verbs")
};

struct CharDeviceFacts {
  std::string path;          // /dev/infiniband/uverbs0, /dev/infiniband/rdma_cm
  std::string device;        // RDMA device it belongs to; empty for rdma_cm
  bool present = false;
  bool is_char_device = false;
  std::optional<std::uint32_t> mode;  // permission bits (st_mode & 07777)
  std::optional<std::uint32_t> uid, gid;
  std::string note;          // stat error, when not present
  // Missing for less than kCharDeviceSettle (10 s): ib_uverbs adds the entry and node just after
  // the device registers and removes them just before it goes, so this is not judged yet.
  bool settling = false;
};

struct CpuGovernorFacts {
  std::string device;              // RDMA device
  std::string local_cpulist;       // as read from device/local_cpulist (trimmed)
  std::map<std::string, std::uint32_t> cpus_by_governor;  // "performance" -> 16
  std::uint32_t unreadable_cpus = 0;  // local CPUs whose scaling_governor is unreadable or garbled
  std::string note;                // why nothing was read (no PCI function, no cpufreq, ...)
};

struct IommuFacts {
  bool cmdline_read = false;
  std::string note;                    // why /proc/cmdline was not read
  std::string options;                 // the IOMMU options found, space-separated, as written
  // "passthrough", "translated", "off", or "default" (no IOMMU option: the kernel's build default)
  std::string mode;
};

// host.device_access resolved on this machine (passwd/group through NSS): who must be able to
// open the device nodes. Absent uid/gids: not configured, or not resolvable (note says which).
struct AccessIdentity {
  std::string user, group;                 // as configured; empty: not configured
  std::optional<std::uint32_t> uid;
  std::vector<std::uint32_t> gids;         // the configured group, and the user's groups
  std::string note;                        // a name that did not resolve
};

struct PlumbingFacts {
  std::vector<ModuleFacts> modules;       // ib_core, ib_uverbs, rdma_ucm, then drivers by name
  std::vector<CharDeviceFacts> char_devices;  // uverbsN by device, then rdma_cm
  std::vector<CpuGovernorFacts> governors;    // by device
  IommuFacts iommu;
  std::string dev_root;                   // the /dev root the char devices were looked up in
  bool dev_root_present = false;          // false: nothing under it could be judged (not captured)
  bool module_dir_present = false;        // <sysfs>/module exists (false: not captured)
  AccessIdentity access;
};

}  // namespace rdmahd
