#include "collectors/roce_qos.h"

#include <algorithm>
#include <cerrno>

#include "collectors/netdev_reads.h"
#include "common/layout_cache.h"
#include "common/parse.h"
#include "common/shared_names.h"
#include "parsers/dcb_json.h"

namespace rdmahd {

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

RDMAHD_REGISTER_COLLECTOR("roce", RoceCollector,
                          "RoCE QoS of netdevs behind RDMA ports: PFC, trust/DSCP map, DCBX, ECN");

}  // namespace rdmahd
