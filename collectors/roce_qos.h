// The RoCE lossless-fabric collectors.
//
// "netdev": the Ethernet netdevs behind RDMA ports (rdma_netdevs.h) and what the NIC says about
//           them: MTU, operstate, speed, carrier changes (sysfs), global pause and driver
//           statistics (ethtool ioctl): per-priority pause frames/durations/transitions, link-level
//           pause, pause-storm events, discards, plus allowlisted raw stats.
// "roce":   the QoS configuration of those netdevs: PFC, APP table (trust mode, DSCP->priority),
//           DCBX (DCB netlink), and ECN/DCQCN enables and parameters (MLNX_OFED sysfs).
//
// When NodeFs::dcb_dir() is set the node is a capture (see dcb_json.h for the folder layout): DCB,
// ethtool stats and global pause come from the captured files and the local kernel is not asked.
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

#include "collectors/collector.h"
#include "collectors/dcb_netlink.h"
#include "collectors/dcb_state.h"
#include "collectors/ethtool_stats.h"
#include "collectors/rdma_netdevs.h"
#include "common/pattern.h"
#include "config/config.h"

namespace rdmahd {

// ---- "netdev" facts ------------------------------------------------------------------------------
struct NetdevFacts {
  std::string netdev;
  bool present = false;  // <sysfs>/class/net/<netdev> exists (else nothing below was read)
  std::optional<std::int64_t> mtu;              // bytes
  std::optional<std::string> operstate;         // "up", "down", ...
  std::optional<std::int64_t> speed_mbps;       // absent while the link is down (-1 / EINVAL)
  std::optional<std::uint64_t> carrier_changes;

  std::optional<PauseParam> global_pause;       // absent: unknown (see global_pause_note)
  std::string global_pause_note;

  bool stats_read = false;                      // false: unknown (see stats_note)
  std::string stats_note;
  std::vector<DriverStat> classified_stats;     // ClassifyDriverStat(name).kind != kOther
  std::vector<DriverStat> allowlisted_stats;    // matched config.roce.extra_ethtool_stats

  // Pause-storm evidence. Totals are absent when the driver has no such counters.
  std::optional<std::uint64_t> storm_events_total;
  std::optional<double> rx_paused_seconds_total;  // time this port was told to pause, all priorities + link-level
  // Growth since this collector's previous run (absent on the first run, or after a counter reset).
  std::optional<double> interval_seconds;
  std::optional<std::uint64_t> storm_events_delta;
  std::optional<double> rx_paused_seconds_delta;
};

struct RdmaNetdevFacts {
  std::vector<RdmaNetdev> links;      // RDMA port -> netdev
  std::vector<NetdevFacts> netdevs;   // one per distinct netdev, sorted by name
  const NetdevFacts* Find(const std::string& netdev) const;
};

// ---- "roce" facts --------------------------------------------------------------------------------
// The DCQCN parameter files of an ECN role folder. The names are listed with the folder and shared
// (immutable) by the collector's layout and every snapshot; a collection stores only the values, so
// it allocates nothing per file (32 netdevs have ~600 of these files).
class EcnParameters {
 public:
  using Names = std::vector<std::string>;  // sorted, unique

  EcnParameters() = default;
  explicit EcnParameters(std::shared_ptr<const Names> names)
      : names_(std::move(names)), values_(names_ ? names_->size() : 0) {}

  // Slot access (every listed name, read or not), in name order.
  std::size_t slot_count() const { return values_.size(); }
  const std::string& name(std::size_t slot) const { return (*names_)[slot]; }
  const std::optional<std::int64_t>& value(std::size_t slot) const { return values_[slot]; }
  void Set(std::size_t slot, std::int64_t v) { values_[slot] = v; }

  std::optional<std::int64_t> Find(std::string_view name) const;
  std::size_t count(std::string_view name) const { return Find(name) ? 1 : 0; }
  // Like std::map::at, for tests: throws std::out_of_range when `name` has no value.
  std::int64_t at(std::string_view name) const;

 private:
  std::shared_ptr<const Names> names_;
  std::vector<std::optional<std::int64_t>> values_;  // parallel to *names_
};

struct EcnRoleFacts {
  std::array<std::optional<bool>, kDcbPriorities> enabled;  // absent: no enable/N file
  EcnParameters parameters;                                 // other files of the role folder
  bool present = false;                                     // the role folder exists
};

struct RoceNetdevFacts {
  std::string netdev;
  std::string dcb_source;               // "netlink" or the capture folder
  std::optional<DcbState> dcb;          // absent: could not be read (dcb_note says why)
  std::string dcb_note;
  std::optional<TrustMode> trust;       // absent: unknown
  std::map<int, int> dscp_priority;     // DSCP -> priority from the APP table
  EcnRoleFacts ecn_np;                  // notification point (receiver: marks CNPs)
  EcnRoleFacts ecn_rp;                  // reaction point (sender: slows down on CNPs)
};

struct RoceQosFacts {
  std::vector<RoceNetdevFacts> netdevs;  // sorted by name
  const RoceNetdevFacts* Find(const std::string& netdev) const;
};

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

  std::string_view Name() const override { return "netdev"; }
  std::string_view Description() const override {
    return "netdevs behind RDMA ports: MTU, state, speed, global pause, pause/discard driver stats";
  }
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
  struct Previous {
    std::chrono::steady_clock::time_point at;
    std::optional<std::uint64_t> storm_events_total;
    std::optional<double> rx_paused_seconds_total;
  };
  // Which of a netdev's driver stats the facts need (classified or allowlisted), derived from its
  // stat names and kept while the driver returns the same names: a driver has hundreds of stats
  // (mlx5: 751) and only a handful matter.
  struct StatLayout {
    std::vector<std::uint8_t> names;        // RawDriverStats::names() this was derived from
    std::vector<std::string> allowlist;     // config.roce.extra_ethtool_stats it was derived with
    std::vector<std::uint32_t> wanted;      // stat indexes
  };
  void ReadEthtool(const CollectContext& ctx, NetdevLayout& layout, NetdevFacts& f, CollectorOutcome& outcome);
  void ClassifyStats(const Config& config, std::vector<DriverStat> stats, NetdevFacts& f);
  std::vector<DriverStat> WantedStats(const Config& config, const std::string& netdev, const RawDriverStats& raw);
  const std::vector<Pattern>& Allowlist(const Config& config);
  void ComputeGrowth(NetdevFacts& f);

  EthtoolReader ethtool_;
  RawDriverStats raw_;  // reused read buffers
  SteadyNow now_;
  RdmaNetdevLinker linker_;
  std::map<std::string, std::unique_ptr<NetdevLayout>> netdev_layouts_;
  std::string layout_root_;  // sysfs root + capture folder the layouts were made for
  std::string read_buf_;
  FsWork work_;
  std::map<std::string, Previous> previous_;
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

  std::string_view Name() const override { return "roce"; }
  std::string_view Description() const override {
    return "RoCE QoS of netdevs behind RDMA ports: PFC, trust/DSCP map, DCBX, ECN";
  }
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
  RdmaNetdevLinker linker_;
  std::map<std::string, std::unique_ptr<NetdevLayout>> layouts_;
  std::string layout_root_;
  std::string read_buf_;
  FsWork work_;
};

// Reads /sys/class/net/<netdev>/ecn/<role>/ (role "roce_np" or "roce_rp") under `fs`, once (the
// collector holds these files instead).
EcnRoleFacts ReadEcnRole(const NodeFs& fs, const std::string& netdev, const std::string& role);

}  // namespace rdmahd
