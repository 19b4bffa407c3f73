// The RoCE lossless-fabric collectors.
//
// "netdev": the Ethernet netdevs behind RDMA ports (the Topology's links) and what the NIC says about
//           them: MTU, operstate, speed, carrier changes (sysfs), global pause and driver
//           statistics (ethtool ioctl): per-priority pause frames/durations/transitions, link-level
//           pause, pause-storm events, discards, plus allowlisted raw stats.
// "roce":   the QoS configuration of those netdevs: PFC, APP table (trust mode, DSCP->priority),
//           DCBX (DCB netlink), and ECN/DCQCN enables and parameters (MLNX_OFED sysfs).
//
// When NodeFs::dcb_dir() is set the node is a capture (collectors/dcb_capture.h has the folder
// layout): DCB, ethtool stats and global pause come from the captured files and the local kernel
// is not asked. Without it they come from the kernel only when NodeFs::asks_kernel() (the live
// /sys); on any other tree they are unknown, their notes saying "not captured" and how to capture
// them.
//
// Scrape cost: every file a steady-state collection reads (netdev attributes, ECN files, capture
// files) is a HeldFile in a per-netdev layout, re-read with one pread; nothing is listed or looked
// up by path. When a layout is listed again is in rdma_netdevs.h (kNetdevRelistInterval). A netdev
// missing from class/net is looked up again on every collection (it may enter this namespace).
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
#include "collectors/ethtool_stats.h"
#include "collectors/rdma_netdevs.h"
#include "facts/netdev_facts.h"
#include "facts/roce_facts.h"
#include "common/held_files.h"
#include "common/layout_cache.h"
#include "common/pattern.h"
#include "config/config.h"

namespace rdmahd {

// Trust from DCB state: the APP trust table when the kernel has one, else DSCP APP entries =>
// DSCP trust, none => PCP trust. Absent when DCB is unsupported or the APP table was not read.
std::optional<TrustMode> DeriveTrust(const DcbState& dcb);

// ---- Collectors ----------------------------------------------------------------------------------
class NetdevCollector : public Collector {
 public:
  NetdevCollector();                                        // real SIOCETHTOOL
  // `now`: the clock layouts are aged by (tests).
  explicit NetdevCollector(std::unique_ptr<EthtoolIoctl> ioctl, SteadyNow now = std::chrono::steady_clock::now);
  ~NetdevCollector() override;

  Status Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& outcome) override;
  void Render(const Snapshot& snapshot, MetricSink& sink) const override;

  // Filesystem work beyond held reads so far (this collector and its netdev links), and the files
  // held open now (tests, benchmark).
  FsWork fs_work() const;
  std::size_t held_descriptors() const;
  // Closes every held descriptor, keeping the layouts: the next reads re-open by path, as after a
  // failed read (tests: on tmpfs a removed file stays readable through an open descriptor, where
  // sysfs answers ENODEV).
  void CloseDescriptorsForTest();

  struct NetdevLayout;  // opaque: the held files of one netdev

 private:
  // Which of a netdev's driver stats the facts need (classified or allowlisted), derived from its
  // stat names and kept while the driver returns the same names: a driver has hundreds of stats
  // and only a handful matter (bench/netdev_bench.cc measures the collector over a real driver's
  // `ethtool -S` list).
  struct StatLayout {
    std::vector<std::uint8_t> names;        // RawDriverStats::names() this was derived from
    std::vector<std::string> allowlist;     // config.roce.extra_ethtool_stats it was derived with
    std::vector<std::uint32_t> wanted;      // stat indexes
  };
  void ReadEthtool(const CollectContext& ctx, NetdevLayout& layout, NetdevFacts& f, CollectorOutcome& outcome);
  void ClassifyStats(const Config& config, std::vector<DriverStat> stats, NetdevFacts& f);
  std::vector<DriverStat> WantedStats(const Config& config, const std::string& netdev, const RawDriverStats& raw);
  const std::vector<Pattern>& Allowlist(const Config& config);

  EthtoolReader ethtool_;
  RawDriverStats raw_;  // reused read buffers
  SteadyNow now_;
  // By netdev, for the sysfs root and capture folder (LayoutRoot); listed again every
  // kNetdevRelistInterval.
  LayoutCache<NetdevLayout> netdev_layouts_;
  std::string read_buf_;
  FsWork work_;
  std::map<std::string, StatLayout> layouts_;
  std::vector<std::string> allowlist_patterns_;
  std::vector<Pattern> allowlist_;
};

class RoceCollector : public Collector {
 public:
  RoceCollector();                                          // real DCB netlink
  explicit RoceCollector(std::unique_ptr<DcbNetlinkTransport> transport,
                         SteadyNow now = std::chrono::steady_clock::now);
  ~RoceCollector() override;

  Status Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& outcome) override;
  void Render(const Snapshot& snapshot, MetricSink& sink) const override;

  // As NetdevCollector's.
  FsWork fs_work() const;
  std::size_t held_descriptors() const;
  void CloseDescriptorsForTest();

  struct NetdevLayout;  // opaque: the held ECN and capture files of one netdev

 private:
  DcbNetlinkReader dcb_;
  SteadyNow now_;
  LayoutCache<NetdevLayout> layouts_;  // as NetdevCollector's
  std::string read_buf_;
  FsWork work_;
};

// Reads /sys/class/net/<netdev>/ecn/<role>/ (role "roce_np" or "roce_rp") under `fs`, once (the
// collector holds these files instead).
EcnRoleFacts ReadEcnRole(const NodeFs& fs, const std::string& netdev, const std::string& role);

}  // namespace rdmahd
