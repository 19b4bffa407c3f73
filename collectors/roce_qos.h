// The "roce" collector: the QoS configuration of the Ethernet netdevs behind RDMA ports (the
// Topology's links): PFC, APP table (trust mode, DSCP->priority), DCBX (DCB netlink), and ECN/DCQCN
// enables and parameters (MLNX_OFED sysfs). Its facts: facts/roce_facts.h. What the NIC says about
// the same netdevs (MTU, pause, driver statistics) is the "netdev" collector's
// (netdev_collector.h).
//
// When NodeFs::dcb_dir() is set the node is a capture (collectors/dcb_capture.h has the folder
// layout): DCB comes from the captured files and the local kernel is not asked. Without it it
// comes from the kernel only when NodeFs::asks_kernel() (the live /sys); on any other tree it is
// unknown, its note saying "not captured" and how to capture it.
//
// Scrape cost: every file a steady-state collection reads (ECN files, capture files) is a HeldFile
// in a per-netdev layout, re-read with one pread; nothing is listed or looked up by path. When a
// layout is listed again is in rdma_netdevs.h (kNetdevRelistInterval). A netdev missing from
// class/net is looked up again on every collection (it may enter this namespace).
#pragma once

#include <array>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/collector.h"
#include "collectors/dcb_netlink.h"
#include "facts/dcb_state.h"
#include "collectors/rdma_netdevs.h"
#include "facts/roce_facts.h"
#include "common/held_files.h"
#include "common/layout_cache.h"
#include "config/config.h"

namespace rdmahd {

// Trust from DCB state: the APP trust table when the kernel has one, else DSCP APP entries =>
// DSCP trust, none => PCP trust. Absent when DCB is unsupported or the APP table was not read.
std::optional<TrustMode> DeriveTrust(const DcbState& dcb);

// ---- Collectors ----------------------------------------------------------------------------------
class RoceCollector : public Collector {
 public:
  RoceCollector();                                          // real DCB netlink
  explicit RoceCollector(std::unique_ptr<DcbNetlinkTransport> transport,
                         SteadyNow now = std::chrono::steady_clock::now);
  ~RoceCollector() override;

  Status Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& outcome) override;
  void Render(const Snapshot& snapshot, MetricSink& sink) const override;

  // Filesystem work beyond held reads so far, the files held open now, and closing them keeping
  // the layouts (tests, benchmark), as NetdevCollector's (netdev_collector.h).
  FsWork fs_work() const;
  std::size_t held_descriptors() const;
  void CloseDescriptorsForTest();

  struct NetdevLayout;  // opaque: the held ECN and capture files of one netdev

 private:
  DcbNetlinkReader dcb_;
  SteadyNow now_;
  // By netdev, for the sysfs root and capture folder (LayoutRoot); listed again every
  // kNetdevRelistInterval.
  LayoutCache<NetdevLayout> layouts_;
  std::string read_buf_;
  FsWork work_;
};

// Reads /sys/class/net/<netdev>/ecn/<role>/ (role "roce_np" or "roce_rp") under `fs`, once (the
// collector holds these files instead).
EcnRoleFacts ReadEcnRole(const NodeFs& fs, const std::string& netdev, const std::string& role);

}  // namespace rdmahd
