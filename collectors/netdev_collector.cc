#include "collectors/netdev_collector.h"

#include <algorithm>
#include <cerrno>

#include "collectors/netdev_reads.h"
#include "common/layout_cache.h"
#include "common/parse.h"
#include "common/shared_names.h"
#include "parsers/ethtool_stats.h"

namespace rdmahd {

// What the netdev collector holds for one netdev.
struct NetdevCollector::NetdevLayout {
  bool present = false;  // class/net/<netdev> exists; false: looked up again every collection
  std::optional<HeldFile> mtu, operstate, speed, carrier_changes;  // nullopt: no such file
  std::string dir;
  std::optional<HeldFile> ethtool_s, ethtool_a;  // capture files (--path.dcb)
  std::string capture_base;

  std::size_t HeldDescriptors() const {
    return CountOpen(mtu) + CountOpen(operstate) + CountOpen(speed) + CountOpen(carrier_changes) +
           CountOpen(ethtool_s) + CountOpen(ethtool_a);
  }
  void CloseDescriptors() {
    for (auto* f : {&mtu, &operstate, &speed, &carrier_changes, &ethtool_s, &ethtool_a}) CloseHeld(*f);
  }
};

namespace {

// The names of the files a netdev's layouts hold, shared by every netdev's folders.
const std::shared_ptr<const NameList>& NetdevAttrNames() {
  static const auto names = std::make_shared<const NameList>(NameList{"mtu", "operstate", "speed", "carrier_changes"});
  return names;
}

NetdevCollector::NetdevLayout DiscoverNetdevAttrs(const NodeFs& fs, const std::string& name, FsWork& work) {
  NetdevCollector::NetdevLayout l;
  l.dir = fs.Sys("class/net/" + name);
  ++work.probes;
  l.present = fs.IsDir(l.dir);
  if (!l.present) return l;
  const auto attrs = HeldFile::MakeFolder(l.dir, NetdevAttrNames());
  l.mtu = HeldIfExists(fs, attrs, 0, work);
  l.operstate = HeldIfExists(fs, attrs, 1, work);
  l.speed = HeldIfExists(fs, attrs, 2, work);
  l.carrier_changes = HeldIfExists(fs, attrs, 3, work);
  if (!fs.dcb_dir().empty()) {
    l.capture_base = fs.dcb_dir() + "/" + name;
    const auto captures = HeldFile::MakeFolder(l.capture_base, CaptureFileNames());
    l.ethtool_s = HeldIfExists(fs, captures, 0, work);
    l.ethtool_a = HeldIfExists(fs, captures, 1, work);
  }
  return l;
}

// The sysfs attributes of a present netdev. False when a read said the netdev is gone.
bool ReadNetdevAttrs(NetdevCollector::NetdevLayout& l, HeldReader& reader, NetdevFacts& f,
                     std::vector<std::string>& errors) {
  if (l.mtu) {
    if (auto v = reader.Read(*l.mtu)) f.mtu = ParseI64(*v);
    else errors.push_back(f.netdev + ": " + reader.error());
  } else {
    errors.push_back(f.netdev + ": no " + l.dir + "/mtu");
  }
  if (reader.gone()) return false;
  if (l.operstate) {
    if (auto v = reader.Read(*l.operstate); v && !Trim(*v).empty()) f.operstate = std::string(Trim(*v));
  }
  if (reader.gone()) return false;
  // speed reads fail with EINVAL while the link is down: that is "unknown", not an error.
  if (l.speed) {
    if (auto v = reader.Read(*l.speed)) {
      if (auto s = ParseI64(*v); s && *s > 0) f.speed_mbps = *s;
    }
  }
  if (reader.gone()) return false;
  if (l.carrier_changes) {
    if (auto v = reader.Read(*l.carrier_changes)) f.carrier_changes = ParseU64(*v);
  }
  return !reader.gone();
}

}  // namespace

NetdevCollector::NetdevCollector() : NetdevCollector(std::make_unique<SocketEthtoolIoctl>()) {}
NetdevCollector::NetdevCollector(std::unique_ptr<EthtoolIoctl> ioctl, SteadyNow now)
    : ethtool_(std::move(ioctl)), now_(now), netdev_layouts_(kNetdevRelistInterval) {}
NetdevCollector::~NetdevCollector() = default;

FsWork NetdevCollector::fs_work() const { return work_; }
std::size_t NetdevCollector::held_descriptors() const { return netdev_layouts_.HeldDescriptors(); }
void NetdevCollector::CloseDescriptorsForTest() { netdev_layouts_.CloseDescriptors(); }

const std::vector<Pattern>& NetdevCollector::Allowlist(const Config& config) {
  if (allowlist_patterns_ != config.Section<RocePolicy>().extra_ethtool_stats) {
    allowlist_.clear();
    for (const auto& p : config.Section<RocePolicy>().extra_ethtool_stats) {
      // The loader refused patterns that do not compile; a hand-built Config's bad one matches nothing.
      if (auto compiled = Pattern::Compile(p); compiled.ok()) allowlist_.push_back(std::move(compiled).value());
    }
    allowlist_patterns_ = config.Section<RocePolicy>().extra_ethtool_stats;
  }
  return allowlist_;
}

std::vector<DriverStat> NetdevCollector::WantedStats(const Config& config, const std::string& netdev,
                                                     const RawDriverStats& raw) {
  StatLayout& layout = layouts_[netdev];
  const auto names = raw.names();
  if (layout.allowlist != config.Section<RocePolicy>().extra_ethtool_stats ||
      !std::equal(names.begin(), names.end(), layout.names.begin(), layout.names.end())) {
    // New netdev, or the driver's stat set changed (mlx5 adds per-priority stats when PFC is turned
    // on, possibly keeping the count): classify every name again.
    const auto& allowlist = Allowlist(config);
    layout.names.assign(names.begin(), names.end());
    layout.allowlist = config.Section<RocePolicy>().extra_ethtool_stats;
    layout.wanted.clear();
    for (std::uint32_t i = 0; i < raw.count; ++i) {
      const std::string name(raw.name(i));
      bool allowed = std::any_of(allowlist.begin(), allowlist.end(),
                                 [&](const Pattern& p) { return p.FullMatch(name); });
      if (allowed || ClassifyDriverStat(name).kind != StatKind::kOther) layout.wanted.push_back(i);
    }
  }
  std::vector<DriverStat> out;
  out.reserve(layout.wanted.size());
  for (std::uint32_t i : layout.wanted) out.push_back({std::string(raw.name(i)), raw.value(i)});
  return out;
}

void NetdevCollector::ClassifyStats(const Config& config, std::vector<DriverStat> stats, NetdevFacts& f) {
  const auto& allowlist = Allowlist(config);
  std::uint64_t storm = 0;
  bool have_storm = false;
  double paused = 0;
  bool have_paused = false;
  for (auto& s : stats) {
    StatMeaning m = ClassifyDriverStat(s.name);
    if (m.kind == StatKind::kPauseStormEvents) {
      storm += s.value;
      have_storm = true;
    }
    if ((m.kind == StatKind::kPauseDuration || m.kind == StatKind::kGlobalPauseDuration) &&
        m.direction == "rx") {
      paused += static_cast<double>(s.value) / m.divide_by;
      have_paused = true;
    }
    bool allowed = std::any_of(allowlist.begin(), allowlist.end(),
                               [&](const Pattern& p) { return p.FullMatch(s.name); });
    if (allowed) f.allowlisted_stats.push_back(s);
    if (m.kind != StatKind::kOther) f.classified_stats.push_back(std::move(s));
  }
  if (have_storm) f.storm_events_total = storm;
  if (have_paused) f.rx_paused_seconds_total = paused;
  f.stats_read = true;
}

void NetdevCollector::ReadEthtool(const CollectContext& ctx, NetdevLayout& layout, NetdevFacts& f,
                                  CollectorOutcome& outcome) {
  if (!ctx.fs.dcb_dir().empty()) {
    const std::string& base = layout.capture_base;
    HeldReader reader(ctx.fs, read_buf_, work_);
    if (auto text = layout.ethtool_s ? reader.Read(*layout.ethtool_s) : std::nullopt) {
      ClassifyStats(ctx.config, ParseEthtoolStatsText(*text).stats, f);
    } else {
      f.stats_note = "not captured (" + base + "/ethtool-S.txt)";
    }
    if (auto text = layout.ethtool_a ? reader.Read(*layout.ethtool_a) : std::nullopt) {
      auto pp = ParseEthtoolPauseText(*text);
      if (pp) f.global_pause = *pp;
      else f.global_pause_note = base + "/ethtool-a.txt: " + pp.error().message;
    } else {
      f.global_pause_note = "not captured (" + base + "/ethtool-a.txt)";
    }
    if (reader.gone()) netdev_layouts_.Expire(f.netdev);  // a capture file went away: list again next time
    return;
  }
  if (!ctx.fs.asks_kernel()) {
    layouts_.erase(f.netdev);
    const std::string& n = f.netdev;
    f.stats_note = NotCaptured("driver statistics come", "ethtool -S " + n + " > DIR/" + n + "/ethtool-S.txt");
    f.global_pause_note = NotCaptured("pause parameters come", "ethtool -a " + n + " > DIR/" + n + "/ethtool-a.txt");
    return;
  }
  if (Status st = ethtool_.ReadRawStats(f.netdev, raw_); st) {
    ClassifyStats(ctx.config, WantedStats(ctx.config, f.netdev, raw_), f);
  } else {
    layouts_.erase(f.netdev);
    f.stats_note = st.error().message;
    if (st.error().errno_value != EOPNOTSUPP) outcome.errors.push_back(st.error().message);
  }
  if (auto pause = ethtool_.ReadPause(f.netdev)) {
    if (*pause) f.global_pause = **pause;
    else f.global_pause_note = "driver does not report pause parameters (EOPNOTSUPP)";
  } else {
    f.global_pause_note = pause.error().message;
    outcome.errors.push_back(pause.error().message);
  }
}

Status NetdevCollector::Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& outcome) {
  netdev_layouts_.SetRoot(LayoutRoot(ctx.fs));  // another tree: nothing held applies
  RdmaNetdevFacts facts;
  facts.links = ctx.topology.links;
  const auto now = now_();
  const std::vector<std::string> netdevs = ctx.topology.Netdevs();
  facts.netdevs.reserve(netdevs.size());
  auto seen = [&](const std::string& name) { return IsListed(netdevs, name); };
  for (const std::string& name : netdevs) {
    NetdevFacts f;
    std::vector<std::string> errors;
    auto discover = [&]() -> Result<NetdevLayout> { return DiscoverNetdevAttrs(ctx.fs, name, work_); };
    // A netdev missing from class/net is looked for again on every collection.
    auto fits = [](const NetdevLayout& l) { return l.present; };
    auto read = [&](NetdevLayout& l) -> std::optional<std::string> {
      f = NetdevFacts{};
      f.netdev = name;
      errors.clear();
      if (!l.present) return std::nullopt;
      f.present = true;
      HeldReader reader(ctx.fs, read_buf_, work_);
      if (ReadNetdevAttrs(l, reader, f, errors)) return std::nullopt;
      return reader.error();
    };
    LayoutUse<NetdevLayout> use = netdev_layouts_.Read(name, now, discover, fits, read);
    NetdevLayout& layout = *use.layout;  // discovery never fails
    if (!f.present) {
      outcome.errors.push_back(name + ": no " + layout.dir + " (netdev in another network namespace?)");
      facts.netdevs.push_back(std::move(f));
      continue;
    }
    // Gone again right after being listed anew: what was read is kept, with the error.
    if (use.gone) errors.push_back(name + ": " + *use.gone);
    for (std::string& e : errors) outcome.errors.push_back(std::move(e));
    ReadEthtool(ctx, layout, f, outcome);
    facts.netdevs.push_back(std::move(f));
  }
  netdev_layouts_.Retain([&](const std::string& name, const NetdevLayout&) { return seen(name); });
  std::erase_if(layouts_, [&](const auto& kv) { return !seen(kv.first); });
  snapshot.Put(std::move(facts));
  return Status::Ok();
}

void NetdevCollector::Render(const Snapshot& snapshot, MetricSink& sink) const {
  const auto* facts = snapshot.Get<RdmaNetdevFacts>();
  if (facts == nullptr) return;
  auto info = sink.Gauge("rdma_netdev_info", "Netdev behind an RDMA port (value 1).");
  for (const auto& l : facts->links) {
    info.Add({{"device", l.device}, {"port", std::to_string(l.port)}, {"netdev", l.netdev}}, 1);
  }
  auto mtu = sink.Gauge("rdma_netdev_mtu_bytes", "MTU of the netdev behind an RDMA port.");
  auto up = sink.Gauge("rdma_netdev_up", "1 if the netdev's operstate is up, else 0.");
  auto speed = sink.Gauge("rdma_netdev_speed_bytes_per_second", "Link speed of the netdev.");
  auto carrier = sink.Counter("rdma_netdev_carrier_changes_total", "Carrier up/down changes of the netdev.");
  auto gpause = sink.Gauge("rdma_global_pause_enabled",
                           "1 if link-level (802.3x) pause is enabled in this direction (ethtool -a).");
  auto pause = sink.Counter("rdma_pause_frames_total",
                            "Per-priority PFC pause frames; rx = received (this port was paused), tx = sent.");
  auto pause_dur = sink.Counter("rdma_pause_duration_seconds_total", "Per-priority time spent in PFC pause.");
  auto pause_tr = sink.Counter("rdma_pause_transitions_total", "Per-priority PFC pause on/off transitions.");
  auto gframes = sink.Counter("rdma_global_pause_frames_total", "Link-level (802.3x) pause frames.");
  auto gdur = sink.Counter("rdma_global_pause_duration_seconds_total", "Time spent in link-level pause.");
  auto storm = sink.Counter("rdma_pause_storm_events_total",
                            "Pause-storm detector events, by driver counter name.");
  auto discards = sink.Counter("rdma_netdev_rx_discards_total",
                               "Packets the port dropped for lack of NIC buffer, by driver counter name.");
  auto oob = sink.Counter("rdma_netdev_rx_out_of_buffer_total",
                          "Packets dropped because no receive buffer was posted (mlx5 rx_out_of_buffer).");
  auto link_errors = sink.Counter("rdma_netdev_link_errors_total",
                                  "PHY and PCIe link error statistics of the driver (mlx5 rx_symbol_err_phy, "
                                  "rx_crc_errors_phy, rx/tx_pci_signal_integrity).");
  auto driver = sink.Counter("rdma_netdev_driver_stat_total",
                             "Raw driver statistic selected by roce.extra_ethtool_stats.");

  for (const auto& f : facts->netdevs) {
    const std::string& n = f.netdev;
    if (f.mtu) mtu.Add({{"netdev", n}}, static_cast<double>(*f.mtu));
    if (f.operstate) up.Add({{"netdev", n}}, *f.operstate == "up" ? 1 : 0);
    if (f.speed_mbps) speed.Add({{"netdev", n}}, static_cast<double>(*f.speed_mbps) * 1e6 / 8);
    if (f.carrier_changes) carrier.Add({{"netdev", n}}, static_cast<double>(*f.carrier_changes));
    if (f.global_pause) {
      gpause.Add({{"netdev", n}, {"direction", "rx"}}, f.global_pause->rx ? 1 : 0);
      gpause.Add({{"netdev", n}, {"direction", "tx"}}, f.global_pause->tx ? 1 : 0);
    }
    for (const auto& s : f.classified_stats) {
      StatMeaning m = ClassifyDriverStat(s.name);
      const double v = static_cast<double>(s.value) / m.divide_by;
      switch (m.kind) {
        case StatKind::kPauseFrames:
          pause.Add({{"netdev", n}, {"priority", Priority(m.priority)}, {"direction", m.direction}}, v);
          break;
        case StatKind::kPauseDuration:
          pause_dur.Add({{"netdev", n}, {"priority", Priority(m.priority)}, {"direction", m.direction}}, v);
          break;
        case StatKind::kPauseTransitions:
          pause_tr.Add({{"netdev", n}, {"priority", Priority(m.priority)}, {"direction", m.direction}}, v);
          break;
        case StatKind::kGlobalPauseFrames: gframes.Add({{"netdev", n}, {"direction", m.direction}}, v); break;
        case StatKind::kGlobalPauseDuration: gdur.Add({{"netdev", n}, {"direction", m.direction}}, v); break;
        case StatKind::kPauseStormEvents: storm.Add({{"netdev", n}, {"stat", s.name}}, v); break;
        case StatKind::kRxDiscards: discards.Add({{"netdev", n}, {"stat", s.name}}, v); break;
        case StatKind::kRxOutOfBuffer: oob.Add({{"netdev", n}}, v); break;
        case StatKind::kLinkErrors: link_errors.Add({{"netdev", n}, {"stat", s.name}}, v); break;
        case StatKind::kPhyPackets:  // only the error checks' denominator
        case StatKind::kOther: break;
      }
    }
    for (const auto& s : f.allowlisted_stats) {
      driver.Add({{"netdev", n}, {"stat", s.name}}, static_cast<double>(s.value));
    }
  }
}

RDMAHD_REGISTER_COLLECTOR("netdev", NetdevCollector,
                          "netdevs behind RDMA ports: MTU, state, speed, global pause, pause/discard driver stats");

}  // namespace rdmahd
