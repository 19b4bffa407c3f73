#include "collectors/roce_qos.h"

#include <algorithm>
#include <cerrno>

#include "collectors/device_reader.h"
#include "common/layout_cache.h"
#include "common/parse.h"
#include "common/shared_names.h"
#include "parsers/dcb_json.h"
#include "parsers/ethtool_stats.h"

namespace rdmahd {
namespace {

std::string Priority(int p) { return std::to_string(p); }

// Whether `name` is among the topology's netdevs (Topology::Netdevs(): sorted, unique), for
// dropping what a netdev that left it held, without a set of copies per collection.
bool IsListed(const std::vector<std::string>& netdevs, const std::string& name) {
  return std::binary_search(netdevs.begin(), netdevs.end(), name);
}

}  // namespace

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

// ---- Held layouts ---------------------------------------------------------------------------------
namespace {

// Held reads for one collection: counts (re)opens, and remembers when a read said the object is
// gone. The returned view is valid until the next Read.
class HeldReader {
 public:
  HeldReader(const NodeFs& fs, std::string& buf, FsWork& work) : fs_(fs), buf_(buf), work_(work) {}
  std::optional<std::string_view> Read(HeldFile& f) {
    if (!f.is_open()) ++work_.opens;
    return Take(f.Read(fs_, buf_));
  }
  std::optional<std::string_view> Read(HeldFolder& folder, std::size_t i) {
    if (!folder.is_open(i)) ++work_.opens;
    return Take(folder.Read(i, fs_, buf_));
  }
  bool gone() const { return gone_; }
  const std::string& error() const { return error_; }  // of the last failed read

 private:
  std::optional<std::string_view> Take(Result<std::string_view> r) {
    if (r.ok()) return *r;
    if (IsGoneErrno(r.error().errno_value)) gone_ = true;
    error_ = r.error().message;
    return std::nullopt;
  }
  const NodeFs& fs_;
  std::string& buf_;
  FsWork& work_;
  bool gone_ = false;
  std::string error_;
};

// File `i` of `folder`, held if it exists.
std::optional<HeldFile> HeldIfExists(const NodeFs& fs, const std::shared_ptr<const HeldFile::Folder>& folder,
                                     std::uint32_t i, FsWork& work) {
  ++work.probes;
  HeldFile file(folder, i);
  if (!fs.Exists(file.path())) return std::nullopt;
  return file;
}

// The names of the files a netdev's layouts hold, shared by every netdev's folders.
const std::shared_ptr<const NameList>& NetdevAttrNames() {
  static const auto names = std::make_shared<const NameList>(NameList{"mtu", "operstate", "speed", "carrier_changes"});
  return names;
}
const std::shared_ptr<const NameList>& CaptureFileNames() {
  static const auto names =
      std::make_shared<const NameList>(NameList{"ethtool-S.txt", "ethtool-a.txt", "pfc.json", "app.json"});
  return names;
}


// One ECN role folder (ecn/roce_np or ecn/roce_rp): enable/<priority> and the DCQCN parameter files,
// each folder held as one HeldFolder (a node of a thousand devices has some 4,000 role folders).
struct EcnRoleLayout {
  bool present = false;
  HeldFolder enable;  // enable/, as listed
  std::array<std::int8_t, kDcbPriorities> enable_file;  // priority -> file of `enable`; -1: none
  HeldFolder parameters;  // the folder's other files, by name; their names are the facts' too

  EcnRoleLayout() { enable_file.fill(-1); }
  std::size_t HeldDescriptors() const { return enable.open_count() + parameters.open_count(); }
  void CloseDescriptors() {
    enable.Close();
    parameters.Close();
  }
};

EcnRoleLayout DiscoverEcnRole(const NodeFs& fs, const std::string& dir, FsWork& work) {
  EcnRoleLayout out;
  ++work.listings;
  auto entries = fs.ListDir(dir);
  if (!entries) {
    const int err = entries.error().errno_value;
    out.present = err != ENOENT && err != ENOTDIR;  // e.g. EACCES: the folder is there
    return out;
  }
  out.present = true;
  EcnParameters::Names parameter_names;
  for (const std::string& name : *entries) {  // sorted
    if (name != "enable") {
      parameter_names.push_back(name);
      continue;
    }
    ++work.listings;
    auto priorities = fs.ListDir(dir + "/enable");
    if (!priorities) continue;
    out.enable = HeldFolder(HeldFile::MakeFolder(dir + "/enable", ShareNames(std::move(*priorities))));
    for (std::size_t i = 0; i < out.enable.size(); ++i) {
      const std::string& p = out.enable.name(i);
      auto v = ParseU64(p);
      if (v && *v < kDcbPriorities && p == std::to_string(*v)) out.enable_file[*v] = static_cast<std::int8_t>(i);
    }
  }
  out.parameters = HeldFolder(HeldFile::MakeFolder(dir, ShareNames(std::move(parameter_names))));
  return out;
}

// File `i` of a role layout's folder: a skipped one is not read, a failed read skips the file until
// the folder is listed again, and a read saying the netdev is gone returns false; otherwise `use`
// gets the text.
template <class Use>
bool ReadEcnFile(HeldFolder& folder, std::size_t i, HeldReader& reader, Use&& use) {
  if (folder.skipped(i)) return true;
  auto text = reader.Read(folder, i);
  if (!text) {
    if (reader.gone()) return false;
    folder.Skip(i);
    return true;
  }
  use(*text);
  return true;
}

// False when a read said the folder is gone. A file that cannot be read for another reason (a
// sub-folder, a driver refusing the query) is skipped until the folder is listed again, so it costs
// no open per collection.
bool ReadEcnRoleLayout(EcnRoleLayout& layout, HeldReader& reader, EcnRoleFacts& out) {
  out.present = layout.present;
  for (int p = 0; p < kDcbPriorities; ++p) {
    if (layout.enable_file[p] < 0) continue;
    if (!ReadEcnFile(layout.enable, static_cast<std::size_t>(layout.enable_file[p]), reader, [&](std::string_view text) {
          if (auto v = ParseU64(text); v && *v <= 1) out.enabled[p] = *v == 1;
        })) {
      return false;
    }
  }
  if (!layout.parameters.names()) return true;
  out.parameters = EcnParameters(layout.parameters.names());
  for (std::size_t i = 0; i < layout.parameters.size(); ++i) {
    if (!ReadEcnFile(layout.parameters, i, reader, [&](std::string_view text) {
          if (auto v = ParseI64(text)) out.parameters.Set(i, *v);
        })) {
      return false;
    }
  }
  return true;
}

std::string EcnRoleDir(const NodeFs& fs, const std::string& netdev, const char* role) {
  return fs.Sys("class/net/" + netdev + "/ecn/" + role);
}

// The sysfs tree and capture folder layouts were made for: another one invalidates them all.
std::string LayoutRoot(const NodeFs& fs) { return fs.sysfs_root() + '\n' + fs.dcb_dir(); }

// Why a fact only the kernel (or a --path.dcb capture) gives is unknown on a tree that is not the
// live /sys, without --path.dcb: the kernel here describes this machine, whose netdev of the same
// name is another one. `what_comes` ("driver statistics come"); `capture`: the commands that
// capture it on the node into DIR.
std::string NotCaptured(std::string_view what_comes, std::string_view capture) {
  return "not captured: " + std::string(what_comes) + " from the node's kernel and --path.sysfs is not /sys (capture `" +
         std::string(capture) + "`, then pass --path.dcb=DIR)";
}

}  // namespace

EcnRoleFacts ReadEcnRole(const NodeFs& fs, const std::string& netdev, const std::string& role) {
  FsWork work;
  std::string buf;
  HeldReader reader(fs, buf, work);
  EcnRoleLayout layout = DiscoverEcnRole(fs, EcnRoleDir(fs, netdev, role.c_str()), work);
  EcnRoleFacts out;
  ReadEcnRoleLayout(layout, reader, out);
  return out;
}

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

// ===================================================================================================
// netdev
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

// ===================================================================================================
// roce
// What the roce collector holds for one netdev.
struct RoceCollector::NetdevLayout {
  bool present = false;  // class/net/<netdev> exists
  EcnRoleLayout np, rp;
  bool capture_dir = false;  // --path.dcb: <dcb>/<netdev>/ exists
  std::string capture_base;
  std::optional<HeldFile> pfc_json, app_json;  // nullopt: not captured
  // The capture as last read and parsed: the files are read on every collection, but parsed (JSON,
  // ~15k instructions a netdev) only when their bytes changed. A read is compared with the text in
  // the read buffer and copied only when it differs; the parsed state is shared with the facts of
  // every collection until then.
  std::optional<std::string> pfc_text, app_text;
  std::optional<Result<std::shared_ptr<const DcbState>>> parsed;  // nullopt: parse the texts again

  std::size_t HeldDescriptors() const {
    return np.HeldDescriptors() + rp.HeldDescriptors() + CountOpen(pfc_json) + CountOpen(app_json);
  }
  void CloseDescriptors() {
    np.CloseDescriptors();
    rp.CloseDescriptors();
    CloseHeld(pfc_json);
    CloseHeld(app_json);
  }
};

namespace {

RoceCollector::NetdevLayout DiscoverRoceNetdev(const NodeFs& fs, const std::string& name, FsWork& work) {
  RoceCollector::NetdevLayout l;
  ++work.probes;
  l.present = fs.IsDir(fs.Sys("class/net/" + name));
  if (l.present) {
    l.np = DiscoverEcnRole(fs, EcnRoleDir(fs, name, "roce_np"), work);
    l.rp = DiscoverEcnRole(fs, EcnRoleDir(fs, name, "roce_rp"), work);
  }
  if (!fs.dcb_dir().empty()) {
    l.capture_base = fs.dcb_dir() + "/" + name;
    ++work.probes;
    l.capture_dir = fs.IsDir(l.capture_base);
    if (l.capture_dir) {
      const auto captures = HeldFile::MakeFolder(l.capture_base, CaptureFileNames());
      l.pfc_json = HeldIfExists(fs, captures, 2, work);
      l.app_json = HeldIfExists(fs, captures, 3, work);
    }
  }
  return l;
}

// A read DCB state as the facts hold it.
Result<std::shared_ptr<const DcbState>> Shared(Result<DcbState> state) {
  if (!state) return state.error();
  return std::make_shared<const DcbState>(std::move(*state));
}

}  // namespace

RoceCollector::RoceCollector() : RoceCollector(std::make_unique<MnlDcbTransport>()) {}
RoceCollector::RoceCollector(std::unique_ptr<DcbNetlinkTransport> transport, SteadyNow now)
    : dcb_(std::move(transport)), now_(now), layouts_(kNetdevRelistInterval) {}
RoceCollector::~RoceCollector() = default;

FsWork RoceCollector::fs_work() const { return work_; }
std::size_t RoceCollector::held_descriptors() const { return layouts_.HeldDescriptors(); }
void RoceCollector::CloseDescriptorsForTest() { layouts_.CloseDescriptors(); }

Status RoceCollector::Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& outcome) {
  layouts_.SetRoot(LayoutRoot(ctx.fs));  // another tree: nothing held applies
  RoceQosFacts facts;
  const auto now = now_();
  const std::vector<std::string> netdevs = ctx.topology.Netdevs();  // sorted, unique
  facts.netdevs.reserve(netdevs.size());
  for (const std::string& name : netdevs) {
    RoceNetdevFacts f;
    // A netdev missing from <sysfs>/class/net lives in another network namespace (or the tree is a
    // capture without it): the kernel cannot be asked about it here, and it has no ECN files. It is
    // looked for again on every collection.
    auto discover = [&]() -> Result<NetdevLayout> { return DiscoverRoceNetdev(ctx.fs, name, work_); };
    auto fits = [](const NetdevLayout& l) { return l.present; };
    auto read = [&](NetdevLayout& l) -> std::optional<std::string> {
      f = RoceNetdevFacts{};
      f.netdev = name;
      HeldReader reader(ctx.fs, read_buf_, work_);
      if (l.present && (!ReadEcnRoleLayout(l.np, reader, f.ecn_np) || !ReadEcnRoleLayout(l.rp, reader, f.ecn_rp))) {
        return reader.error();  // the netdev went away or was re-created
      }
      // Capture files: a missing one is "not captured"; one gone while held is listed again next time.
      auto read_capture = [&](std::optional<HeldFile>& file, std::optional<std::string>& kept) {
        std::optional<std::string_view> text;
        if (file) {
          text = reader.Read(*file);
          if (!text && reader.gone()) layouts_.Expire(name);
        }
        if (text ? kept && *kept == *text : !kept) return;  // unchanged: so is its parse
        if (!text) {
          kept.reset();
        } else if (kept) {
          kept->assign(*text);  // reuses the capacity of an earlier read
        } else {
          kept.emplace(*text);
        }
        l.parsed.reset();
      };
      read_capture(l.pfc_json, l.pfc_text);
      read_capture(l.app_json, l.app_text);
      return std::nullopt;
    };
    NetdevLayout* layout = layouts_.Read(name, now, discover, fits, read).layout;  // discovery never fails
    const bool present = layout->present;
    Result<std::shared_ptr<const DcbState>> dcb = Error{"unread"};
    bool not_captured = false;
    if (!ctx.fs.dcb_dir().empty()) {
      if (!layout->capture_dir) {
        dcb = Error{"no DCB capture for " + name + " (" + layout->capture_base + ")", ENOENT};
      } else {
        if (!layout->parsed) {
          layout->parsed = Shared(DcbStateFromCapture(layout->capture_base, layout->pfc_text, layout->app_text));
        }
        dcb = *layout->parsed;
      }
    } else if (!present) {
      dcb = Error{name + ": no " + ctx.fs.Sys("class/net/" + name) + " (netdev in another network namespace?)", ENODEV};
    } else if (!ctx.fs.asks_kernel()) {
      not_captured = true;
      dcb = Error{NotCaptured("PFC and APP state come", "dcb -j pfc show dev " + name + " > DIR/" + name +
                                                            "/pfc.json; dcb -j app show dev " + name + " > DIR/" +
                                                            name + "/app.json"),
                  ENODATA};
    } else {
      dcb = Shared(dcb_.Read(name));
    }
    if (dcb) {
      f.trust = DeriveTrust(**dcb);
      f.dscp_priority = DscpPriorityMap(**dcb);
      f.dcb = std::move(*dcb);
    } else {
      f.dcb_note = dcb.error().message;
      if (!not_captured) outcome.errors.push_back(dcb.error().message);  // not read is not failed
    }
    if (!present) {  // no ECN facts for a netdev not here
      f.ecn_np = EcnRoleFacts{};
      f.ecn_rp = EcnRoleFacts{};
    }
    facts.netdevs.push_back(std::move(f));
  }
  layouts_.Retain([&](const std::string& n, const NetdevLayout&) { return IsListed(netdevs, n); });
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
    const MetricSink::LabelPrefix netdev_labels({{"netdev", n}});  // leads every series below
    if (f.dcb) {
      supported.Add({{"netdev", n}}, f.dcb->supported ? 1 : 0);
      if (f.dcb->pfc) {
        for (int p = 0; p < kDcbPriorities; ++p) {
          pfc.Add(netdev_labels, {{"priority", Priority(p)}}, f.dcb->pfc->Enabled(p) ? 1 : 0);
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
          ecn.Add(netdev_labels, {{"priority", Priority(p)}, {"role", role_name}}, *role->enabled[p] ? 1 : 0);
        }
      }
      const EcnParameters& params = role->parameters;
      if (params.slot_count() == 0) continue;
      const MetricSink::LabelPrefix role_labels({{"netdev", n}, {"role", role_name}});
      for (std::size_t i = 0; i < params.slot_count(); ++i) {
        if (params.value(i)) {
          ecn_param.Add(role_labels, {{"parameter", params.name(i)}}, static_cast<double>(*params.value(i)));
        }
      }
    }
  }
}

RDMAHD_REGISTER_COLLECTOR("netdev", NetdevCollector,
                          "netdevs behind RDMA ports: MTU, state, speed, global pause, pause/discard driver stats");
RDMAHD_REGISTER_COLLECTOR("roce", RoceCollector,
                          "RoCE QoS of netdevs behind RDMA ports: PFC, trust/DSCP map, DCBX, ECN");

}  // namespace rdmahd
