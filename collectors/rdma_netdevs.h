// Which Ethernet netdevs sit behind the node's RDMA (RoCE) ports. The RoCE QoS settings that
// matter (PFC, trust, ECN, MTU, pause) live on these netdevs, not on the RDMA device.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/node_fs.h"
#include "common/result.h"
#include "config/config.h"

namespace rdmahd {

struct RdmaNetdev {
  std::string device;  // mlx5_0
  int port = 0;        // 1-based RDMA port
  std::string netdev;  // ens1f0np0
  bool operator==(const RdmaNetdev&) const = default;
};

// For each RDMA device matching `filter` and each of its ports whose link_layer is Ethernet: the
// netdev names from ports/P/gid_attrs/ndevs/N (the GID table's own record; reading an unused GID's
// entry fails, that is normal). When a port has no gid_attrs (older kernels, some drivers), falls
// back to device/net/*, picking the netdev whose dev_port is P-1, or all of them on a single-port
// device. InfiniBand ports are skipped: their IPoIB netdevs carry no RoCE QoS.
// Sorted by (device, port, netdev), no duplicates. A node without /sys/class/infiniband yields an
// empty list; unreadable devices are reported in `errors` and skipped.
std::vector<RdmaNetdev> DiscoverRdmaNetdevs(const NodeFs& fs, const DeviceFilter& filter,
                                            std::vector<std::string>& errors);

struct RdmaDevicesFacts;
class Snapshot;

// The same answer for this collection, read once: from the netdev collector's links when it ran
// already, else from the GID tables the devices collector read (only ports whose GIDs name no
// netdev touch sysfs, for the device/net fallback), else by DiscoverRdmaNetdevs.
std::vector<RdmaNetdev> RdmaNetdevsOf(const Snapshot& snapshot, const NodeFs& fs,
                                      const DeviceFilter& filter, std::vector<std::string>& errors);

// ---- Rediscovery of the netdev side (docs/performance.md, "What is listed when") -----------------
// What the netdev and roce collectors learn by listing directories (which netdev sits behind a port
// whose GIDs name none, which ECN and capture files exist) is kept, and each file is then held
// open. A steady-state scrape lists nothing. A layout is listed again when
//  - something new is named: a new device or port in the devices collector's facts (it lists
//    class/infiniband on every collection), a new netdev in a GID table;
//  - a held read fails with ENODEV/ENOENT/ENXIO (the kernel object went away): at once, and the
//    values are read again in the same collection;
//  - it is older than kNetdevRelistInterval, for what nothing signals: a file or folder added
//    beside held ones (ECN parameters a newer driver adds), a netdev moved to another network
//    namespace (its held files still read).
// sysfs has no inotify, so the interval bounds how late such an addition is seen.
inline constexpr std::chrono::seconds kNetdevRelistInterval{30};

// The clock layouts are aged by (tests move it on instead of sleeping 30 s).
using SteadyNow = std::function<std::chrono::steady_clock::time_point()>;

// Filesystem work other than re-reading held descriptors, counted for tests and the benchmark: a
// steady-state scrape does none of it.
struct FsWork {
  std::uint64_t opens = 0;     // files opened (held files opened or re-opened, whole-file reads)
  std::uint64_t listings = 0;  // directories listed
  std::uint64_t probes = 0;    // path lookups (stat/access) to see whether something exists
  bool operator==(const FsWork&) const = default;
  FsWork& operator+=(const FsWork& o) {
    opens += o.opens;
    listings += o.listings;
    probes += o.probes;
    return *this;
  }
  friend FsWork operator+(FsWork a, const FsWork& b) { return a += b; }
};

// RdmaNetdevsOf with the listings kept: the device/net fallback (ports whose GIDs name no netdev)
// is listed again only when the devices collector's devices or ports change, after Invalidate(),
// or after kNetdevRelistInterval; without the devices collector's facts, the whole discovery is
// kept the same way. One per collector; not thread-safe (collections are serialized).
class RdmaNetdevLinker {
 public:
  explicit RdmaNetdevLinker(SteadyNow now = std::chrono::steady_clock::now) : now_(std::move(now)) {}
  std::vector<RdmaNetdev> Links(const Snapshot& snapshot, const NodeFs& fs, const DeviceFilter& filter,
                                std::vector<std::string>& errors);
  // A netdev read said the kernel object is gone (a driver reload, a rename): list again next time.
  void Invalidate() { valid_ = false; }
  const FsWork& work() const { return work_; }

 private:
  struct Fallback {  // the device/net answer for one device's unresolved ports
    std::vector<int> unresolved;
    std::size_t port_count = 0;
    std::vector<RdmaNetdev> links;
  };
  SteadyNow now_;
  FsWork work_;
  bool valid_ = false;
  std::chrono::steady_clock::time_point listed_at_{};
  std::string sysfs_root_;
  std::map<std::string, Fallback> fallbacks_;     // by device (devices collector's facts present)
  std::vector<std::string> filter_include_, filter_exclude_;
  bool have_discovered_ = false;
  std::vector<RdmaNetdev> discovered_;            // DiscoverRdmaNetdevs (no devices facts)
  std::vector<std::string> discovered_errors_;    // reported again with every cached answer
};

}  // namespace rdmahd
