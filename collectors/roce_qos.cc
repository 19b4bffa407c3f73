#include "collectors/roce_qos.h"

#include <algorithm>
#include <cerrno>
#include <set>

#include "collectors/dcb_json.h"
#include "common/parse.h"

namespace rdmahd {
namespace {

std::vector<std::string> DistinctNetdevs(const std::vector<RdmaNetdev>& links) {
  std::set<std::string> names;
  for (const auto& l : links) names.insert(l.netdev);
  return {names.begin(), names.end()};
}

std::string Priority(int p) { return std::to_string(p); }


}  // namespace

const NetdevFacts* RdmaNetdevFacts::Find(const std::string& netdev) const {
  for (const auto& n : netdevs) {
    if (n.netdev == netdev) return &n;
  }
  return nullptr;
}

const RoceNetdevFacts* RoceQosFacts::Find(const std::string& netdev) const {
  for (const auto& n : netdevs) {
    if (n.netdev == netdev) return &n;
  }
  return nullptr;
}

std::optional<TrustMode> DeriveTrust(const DcbState& dcb) {
  if (!dcb.supported) return std::nullopt;
  if (dcb.app_trust) {
    bool dscp = std::find(dcb.app_trust->begin(), dcb.app_trust->end(), kAppSelectorDscp) !=
                dcb.app_trust->end();
    return dscp ? TrustMode::kDscp : TrustMode::kPcp;
  }
  if (!dcb.app) return std::nullopt;
  bool any_dscp = std::any_of(dcb.app->begin(), dcb.app->end(),
                              [](const DcbAppEntry& e) { return e.selector == kAppSelectorDscp; });
  return any_dscp ? TrustMode::kDscp : TrustMode::kPcp;
}

EcnRoleFacts ReadEcnRole(const NodeFs& fs, const std::string& netdev, const std::string& role) {
  EcnRoleFacts out;
  const std::string dir = fs.Sys("class/net/" + netdev + "/ecn/" + role);
  if (!fs.IsDir(dir)) return out;
  out.present = true;
  for (int p = 0; p < kDcbPriorities; ++p) {
    auto text = fs.ReadFile(dir + "/enable/" + std::to_string(p));
    if (!text) continue;
    if (auto v = ParseU64(*text); v && *v <= 1) out.enabled[p] = *v == 1;
  }
  if (auto entries = fs.ListDir(dir)) {
    for (const std::string& name : *entries) {
      if (name == "enable") continue;
      auto text = fs.ReadFile(dir + "/" + name);
      if (!text) continue;
      if (auto v = ParseI64(*text)) out.parameters[name] = *v;
    }
  }
  return out;
}

// ===================================================================================================
// netdev
NetdevCollector::NetdevCollector() : NetdevCollector(std::make_unique<SocketEthtoolIoctl>()) {}
NetdevCollector::NetdevCollector(std::unique_ptr<EthtoolIoctl> ioctl) : ethtool_(std::move(ioctl)) {}

const std::vector<Pattern>& NetdevCollector::Allowlist(const Config& config) {
  if (allowlist_patterns_ != config.roce.extra_ethtool_stats) {
    allowlist_.clear();
    for (const auto& p : config.roce.extra_ethtool_stats) {
      // The loader refused patterns that do not compile; a hand-built Config's bad one matches nothing.
      if (auto compiled = Pattern::Compile(p); compiled.ok()) allowlist_.push_back(std::move(compiled).value());
    }
    allowlist_patterns_ = config.roce.extra_ethtool_stats;
  }
  return allowlist_;
}

std::vector<DriverStat> NetdevCollector::WantedStats(const Config& config, const std::string& netdev,
                                                     const RawDriverStats& raw) {
  StatLayout& layout = layouts_[netdev];
  const auto names = raw.names();
  if (layout.allowlist != config.roce.extra_ethtool_stats ||
      !std::equal(names.begin(), names.end(), layout.names.begin(), layout.names.end())) {
    // New netdev, or the driver's stat set changed (mlx5 adds per-priority stats when PFC is turned
    // on, possibly keeping the count): classify every name again.
    const auto& allowlist = Allowlist(config);
    layout.names.assign(names.begin(), names.end());
    layout.allowlist = config.roce.extra_ethtool_stats;
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

void NetdevCollector::ReadEthtool(const CollectContext& ctx, NetdevFacts& f, CollectorOutcome& outcome) {
  const std::string& capture = ctx.fs.dcb_dir();
  if (!capture.empty()) {
    const std::string base = capture + "/" + f.netdev;
    if (auto text = ctx.fs.ReadFile(base + "/ethtool-S.txt")) {
      ClassifyStats(ctx.config, ParseEthtoolStatsText(*text).stats, f);
    } else {
      f.stats_note = "not captured (" + base + "/ethtool-S.txt)";
    }
    if (auto text = ctx.fs.ReadFile(base + "/ethtool-a.txt")) {
      auto pp = ParseEthtoolPauseText(*text);
      if (pp) f.global_pause = *pp;
      else f.global_pause_note = base + "/ethtool-a.txt: " + pp.error().message;
    } else {
      f.global_pause_note = "not captured (" + base + "/ethtool-a.txt)";
    }
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

void NetdevCollector::ComputeGrowth(NetdevFacts& f) {
  const auto now = std::chrono::steady_clock::now();
  auto it = previous_.find(f.netdev);
  if (it != previous_.end()) {
    const Previous& prev = it->second;
    f.interval_seconds = std::chrono::duration<double>(now - prev.at).count();
    // A total that went down means the driver was reloaded: no growth can be computed this time.
    if (f.storm_events_total && prev.storm_events_total && *f.storm_events_total >= *prev.storm_events_total) {
      f.storm_events_delta = *f.storm_events_total - *prev.storm_events_total;
    }
    if (f.rx_paused_seconds_total && prev.rx_paused_seconds_total &&
        *f.rx_paused_seconds_total >= *prev.rx_paused_seconds_total) {
      f.rx_paused_seconds_delta = *f.rx_paused_seconds_total - *prev.rx_paused_seconds_total;
    }
  }
  previous_[f.netdev] = Previous{now, f.storm_events_total, f.rx_paused_seconds_total};
}

Status NetdevCollector::Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& outcome) {
  RdmaNetdevFacts facts;
  facts.links = RdmaNetdevsOf(snapshot, ctx.fs, ctx.config.devices, outcome.errors);
  std::set<std::string> seen;
  for (const std::string& name : DistinctNetdevs(facts.links)) {
    seen.insert(name);
    NetdevFacts f;
    f.netdev = name;
    const std::string dir = ctx.fs.Sys("class/net/" + name);
    if (!ctx.fs.IsDir(dir)) {
      outcome.errors.push_back(name + ": no " + dir + " (netdev in another network namespace?)");
      held_.ForgetPrefix(dir + "/");
      facts.netdevs.push_back(std::move(f));
      continue;
    }
    f.present = true;
    if (auto v = held_.Read(ctx.fs, dir + "/mtu"); v) f.mtu = ParseI64(*v);
    else outcome.errors.push_back(name + ": " + v.error().message);
    if (auto v = held_.Read(ctx.fs, dir + "/operstate"); v && !Trim(*v).empty()) f.operstate = std::string(Trim(*v));
    // speed reads fail with EINVAL while the link is down: that is "unknown", not an error.
    if (auto v = held_.Read(ctx.fs, dir + "/speed"); v) {
      if (auto s = ParseI64(*v); s && *s > 0) f.speed_mbps = *s;
    }
    if (auto v = held_.Read(ctx.fs, dir + "/carrier_changes"); v) f.carrier_changes = ParseU64(*v);
    ReadEthtool(ctx, f, outcome);
    ComputeGrowth(f);
    facts.netdevs.push_back(std::move(f));
  }
  for (auto it = previous_.begin(); it != previous_.end();) {
    it = seen.count(it->first) ? std::next(it) : previous_.erase(it);
  }
  for (auto it = layouts_.begin(); it != layouts_.end();) {
    it = seen.count(it->first) ? std::next(it) : layouts_.erase(it);
  }
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
        case StatKind::kOther: break;
      }
    }
    for (const auto& s : f.allowlisted_stats) {
      driver.Add({{"netdev", n}, {"stat", s.name}}, static_cast<double>(s.value));
    }
  }
}

// ===================================================================================================
// roce
RoceCollector::RoceCollector() : RoceCollector(std::make_unique<MnlDcbTransport>()) {}
RoceCollector::RoceCollector(std::unique_ptr<DcbNetlinkTransport> transport) : dcb_(std::move(transport)) {}

Status RoceCollector::Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& outcome) {
  RoceQosFacts facts;
  auto links = RdmaNetdevsOf(snapshot, ctx.fs, ctx.config.devices, outcome.errors);
  const auto* netdev_facts = snapshot.Get<RdmaNetdevFacts>();
  for (const std::string& name : DistinctNetdevs(links)) {
    RoceNetdevFacts f;
    f.netdev = name;
    // A netdev missing from <sysfs>/class/net lives in another network namespace (or the tree is a
    // capture without it): the kernel cannot be asked about it here, and it has no ECN files.
    const NetdevFacts* nf = netdev_facts ? netdev_facts->Find(name) : nullptr;
    const std::string netdev_dir = ctx.fs.Sys("class/net/" + name);
    const bool present = nf ? nf->present : ctx.fs.IsDir(netdev_dir);
    Result<DcbState> dcb = Error{"unread"};
    if (!ctx.fs.dcb_dir().empty()) {
      f.dcb_source = ctx.fs.dcb_dir();
      dcb = ReadDcbCapture(ctx.fs.dcb_dir(), name);
    } else if (!present) {
      f.dcb_source = "netlink";
      dcb = Error{name + ": no " + netdev_dir + " (netdev in another network namespace?)", ENODEV};
    } else {
      f.dcb_source = "netlink";
      dcb = dcb_.Read(name);
    }
    if (dcb) {
      f.trust = DeriveTrust(*dcb);
      f.dscp_priority = DscpPriorityMap(*dcb);
      f.dcb = std::move(*dcb);
    } else {
      f.dcb_note = dcb.error().message;
      outcome.errors.push_back(dcb.error().message);
    }
    if (present) {
      f.ecn_np = ReadEcnRole(ctx.fs, name, "roce_np");
      f.ecn_rp = ReadEcnRole(ctx.fs, name, "roce_rp");
    }
    facts.netdevs.push_back(std::move(f));
  }
  snapshot.Put(std::move(facts));
  return Status::Ok();
}

void RoceCollector::Render(const Snapshot& snapshot, MetricSink& sink) const {
  const auto* facts = snapshot.Get<RoceQosFacts>();
  if (facts == nullptr) return;
  auto supported = sink.Gauge("rdma_dcb_supported",
                              "1 if the netdev's driver answers DCB queries, 0 if it has no DCB (EOPNOTSUPP).");
  auto pfc = sink.Gauge("rdma_pfc_enabled", "1 if PFC is enabled on the priority, 0 if not (absent when unknown).");
  auto cap = sink.Gauge("rdma_pfc_capable_traffic_classes",
                        "How many traffic classes may have PFC enabled at once (ieee_pfc.pfc_cap).");
  auto trust = sink.Gauge("rdma_trust_info", "The netdev's QoS trust mode (value 1).");
  auto dscp = sink.Gauge("rdma_dscp_priority", "Priority a DSCP value is mapped to by the DCB APP table.");
  auto ecn = sink.Gauge("rdma_ecn_enabled",
                        "1 if RoCE ECN (DCQCN) is enabled on the priority for the role (np/rp), else 0.");
  auto ecn_param = sink.Gauge("rdma_ecn_parameter", "Raw value of a RoCE ECN (DCQCN) parameter file.");
  for (const auto& f : facts->netdevs) {
    const std::string& n = f.netdev;
    if (f.dcb) {
      supported.Add({{"netdev", n}}, f.dcb->supported ? 1 : 0);
      if (f.dcb->pfc) {
        for (int p = 0; p < kDcbPriorities; ++p) {
          pfc.Add({{"netdev", n}, {"priority", Priority(p)}}, f.dcb->pfc->Enabled(p) ? 1 : 0);
        }
        cap.Add({{"netdev", n}}, f.dcb->pfc->pfc_cap);
      }
    }
    if (f.trust) trust.Add({{"netdev", n}, {"trust", *f.trust == TrustMode::kDscp ? "dscp" : "pcp"}}, 1);
    for (const auto& [d, p] : f.dscp_priority) dscp.Add({{"netdev", n}, {"dscp", std::to_string(d)}}, p);
    for (const auto* role : {&f.ecn_np, &f.ecn_rp}) {
      const char* role_name = role == &f.ecn_np ? "np" : "rp";
      for (int p = 0; p < kDcbPriorities; ++p) {
        if (role->enabled[p]) {
          ecn.Add({{"netdev", n}, {"priority", Priority(p)}, {"role", role_name}}, *role->enabled[p] ? 1 : 0);
        }
      }
      for (const auto& [name, value] : role->parameters) {
        ecn_param.Add({{"netdev", n}, {"role", role_name}, {"parameter", name}}, static_cast<double>(value));
      }
    }
  }
}

RDMAHD_REGISTER_COLLECTOR("netdev", NetdevCollector);
RDMAHD_REGISTER_COLLECTOR("roce", RoceCollector);

}  // namespace rdmahd
