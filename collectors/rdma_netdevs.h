// Which Ethernet netdevs sit behind the node's RDMA (RoCE) ports, where the GID table does not say,
// and when what the netdev side learnt by listing is listed again. The RoCE QoS settings that
// matter (PFC, trust, ECN, MTU, pause) live on these netdevs, not on the RDMA device.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/node_fs.h"
#include "core/topology.h"

namespace rdmahd {

// ---- Rediscovery of the netdev side (docs/performance.md, "What is listed when") -----------------
// What the topology stage and the netdev and roce collectors learn by listing directories (which
// netdev sits behind a port whose GIDs name none, which ECN and capture files exist) is kept, and
// each file is then held open. A steady-state scrape lists nothing. A layout is listed again when
//  - something new is named: a new device or port in the topology (class/infiniband is listed on
//    every collection), a new netdev in a GID table;
//  - a held read fails with ENODEV/ENOENT/ENXIO (the kernel object went away): at once, and the
//    values are read again in the same collection;
//  - it is older than kNetdevRelistInterval, for what nothing signals: a file or folder added
//    beside held ones (ECN parameters a newer driver adds), a netdev moved to another network
//    namespace (its held files still read), a netdev renamed under an unchanged GID.
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

// The device/net/* answer for Ethernet ports of `device` (directory `dev_dir`) whose GID table
// named no netdev (`unresolved`, 1-based): the netdev whose dev_port is P-1, or every netdev of a
// single-port device (`port_count` 1). Nothing for a device without device/net (rxe has no
// device/ link). InfiniBand ports are never asked about: their IPoIB netdevs carry no RoCE QoS.
std::vector<RdmaNetdev> FallbackNetdevs(const NodeFs& fs, const std::string& device, const std::string& dev_dir,
                                        const std::vector<int>& unresolved, std::size_t port_count, FsWork& work);

}  // namespace rdmahd
