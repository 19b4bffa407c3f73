#include "collectors/rdma_devices.h"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <utility>

#include "collectors/device_metrics.h"
#include "collectors/device_reader.h"
#include "collectors/ib_sysfs_parse.h"
#include "common/layout_cache.h"
#include "common/parse.h"

namespace rdmahd {
namespace {

// Device attributes, in the order the info metric lists them.
// `stable`: fixed while the device object exists (see the header), read once.
struct DeviceAttr {
  std::string_view file;
  std::optional<std::string> RdmaDeviceFacts::*member;
  bool stable;
};
constexpr std::array<DeviceAttr, 6> kDeviceAttrs = {{
    {"fw_ver", &RdmaDeviceFacts::fw_ver, false},  // live firmware activation changes it
    {"board_id", &RdmaDeviceFacts::board_id, true},
    {"hca_type", &RdmaDeviceFacts::hca_type, true},
    {"node_guid", &RdmaDeviceFacts::node_guid, true},
    {"sys_image_guid", &RdmaDeviceFacts::sys_image_guid, true},
    {"node_type", &RdmaDeviceFacts::node_type, true},
}};

// One counter directory: the names (shared with the snapshots) and a held file per name.
struct CounterDir {
  std::shared_ptr<const CounterValues::Names> names;
  std::vector<HeldFile> files;  // parallel to *names
};

struct PortLayout {
  std::uint32_t port = 0;
  std::optional<HeldFile> state, phys_state, rate;  // nullopt: file absent
  CounterDir counters, counters_ext, hw_counters;
  bool hw_counters_from_files = false;  // RDMA netlink failed for this port: read the files
};

// Lists a directory of counter files. A missing directory is normal (bnxt_re and rxe have no
// counters/); other failures are reported and mark the layout incomplete.
CounterDir DiscoverCounterFiles(const NodeFs& fs, const std::string& dir, std::vector<std::string>& errors,
                                bool& complete) {
  CounterDir out;
  auto names = fs.ListDir(dir);  // sorted, unique
  if (!names.ok()) {
    if (names.error().errno_value != ENOENT) {
      errors.push_back(names.error().message);
      complete = false;
    }
    return out;
  }
  out.files.reserve(names->size());
  auto shared_dir = std::make_shared<const std::string>(dir);
  for (const std::string& n : *names) out.files.emplace_back(shared_dir, n);
  out.names = std::make_shared<const CounterValues::Names>(std::move(*names));
  return out;
}

// Reads the values of one counter directory through held descriptors.
void ReadCounterFile(DeviceReader& reader, CounterDir& dir, std::size_t i, CounterValues& out) {
  HeldFile& f = dir.files[i];
  std::optional<std::string_view> text = reader.Read(f);
  if (!text) return;
  // A number first: "N/A (no PMA)" (absent, not an error) is the exception, and this runs for
  // every counter file on every scrape.
  if (std::optional<std::uint64_t> v = ParseU64(*text)) {
    out.Set(i, *v);
    return;
  }
  if (IsNotAvailableValue(*text)) return;
  reader.Unparseable(f.path(), *text);
}

void ReadCounters(DeviceReader& reader, CounterDir& dir, CounterValues& out) {
  if (dir.files.empty()) return;
  out = CounterValues(dir.names);
  for (std::size_t i = 0; i < dir.files.size(); ++i) ReadCounterFile(reader, dir, i, out);
}

// hw counters from an RDMA netlink answer, for the names `dir` lists; a listed name the answer
// lacks is read from its file.
void SetCounters(DeviceReader& reader, CounterDir& dir, const std::vector<NldevHwCounter>& answer, CounterValues& out) {
  out = CounterValues(dir.names);
  const CounterValues::Names& names = *dir.names;
  for (const NldevHwCounter& c : answer) {
    auto it = std::lower_bound(names.begin(), names.end(), c.name);
    if (it != names.end() && *it == c.name) out.Set(static_cast<std::size_t>(it - names.begin()), c.value);
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (!out.value(i)) ReadCounterFile(reader, dir, i, out);
  }
}

void ReadEnum(DeviceReader& reader, std::optional<HeldFile>& file, std::optional<SysfsEnumValue>& out) {
  if (!file) return;
  if (auto v = reader.Read(*file)) {
    out = ParseSysfsEnum(*v);
    if (!out) reader.Unparseable(file->path(), *v);
  }
}

}  // namespace

struct RdmaDevicesCollector::DeviceLayout {
  std::string dir, dir_prefix;  // prefix = dir + "/"
  ino_t inode = 0;
  std::uint64_t generation = 0;  // the Topology generation it was discovered for
  // nullopt: file absent, or (stable attributes) already read into stable_values.
  std::array<std::optional<HeldFile>, kDeviceAttrs.size()> attrs;
  std::array<std::optional<std::string>, kDeviceAttrs.size()> stable_values;
  std::vector<PortLayout> ports;
  bool complete = true;  // false: discovery hit errors; rediscover next collection

  std::size_t HeldDescriptors() const {
    std::size_t n = 0;
    for (const auto& f : attrs) n += CountOpen(f);
    for (const PortLayout& p : ports) {
      n += CountOpen(p.state) + CountOpen(p.phys_state) + CountOpen(p.rate);
      for (const CounterDir* counters : {&p.counters, &p.counters_ext, &p.hw_counters}) {
        for (const HeldFile& f : counters->files) n += f.is_open();
      }
    }
    return n;
  }
};

struct RdmaDevicesCollector::State {
  // By device name, for the sysfs root. Layouts own their held descriptors: dropping one closes them.
  LayoutCache<DeviceLayout> layouts;
  std::string read_buf;  // content of the last held read
};

namespace {

// Ports of one driver list the same counter files: share one name list between them (across
// devices too), so the renderer maps named counters once per distinct list instead of once per port.
void ShareEqualCounterNames(const RdmaDevicesCollector::State& st, RdmaDevicesCollector::DeviceLayout& fresh) {
  std::vector<std::shared_ptr<const CounterValues::Names>> known;
  st.layouts.ForEach([&](const std::string&, const RdmaDevicesCollector::DeviceLayout& d) {
    if (&d == &fresh) return;
    for (const PortLayout& p : d.ports) {
      for (const CounterDir* dir : {&p.counters, &p.counters_ext, &p.hw_counters}) {
        if (dir->names && std::find(known.begin(), known.end(), dir->names) == known.end()) {
          known.push_back(dir->names);
        }
      }
    }
  });
  for (PortLayout& p : fresh.ports) {
    for (CounterDir* dir : {&p.counters, &p.counters_ext, &p.hw_counters}) {
      if (!dir->names) continue;
      auto same = std::find_if(known.begin(), known.end(), [&](const auto& k) { return *k == *dir->names; });
      if (same != known.end()) {
        dir->names = *same;
      } else {
        known.push_back(dir->names);
      }
    }
  }
}

Result<RdmaDevicesCollector::DeviceLayout> DiscoverDevice(const NodeFs& fs, const std::string& class_dir,
                                                          const TopologyDevice& td, std::vector<std::string>& errors) {
  RdmaDevicesCollector::DeviceLayout d;
  d.dir = class_dir + "/" + td.name;
  d.dir_prefix = d.dir + "/";
  d.generation = td.generation;
  struct stat st {};
  if (::stat(d.dir.c_str(), &st) != 0) return Error::FromErrno("stat " + d.dir, errno);
  d.inode = st.st_ino;
  for (std::size_t i = 0; i < kDeviceAttrs.size(); ++i) {
    std::string path = d.dir_prefix + std::string(kDeviceAttrs[i].file);
    if (AttributePresent(fs, path)) d.attrs[i].emplace(std::move(path));
  }
  for (const TopologyPort& tp : td.ports) {
    PortLayout& p = d.ports.emplace_back();
    p.port = tp.port;
    const std::string port_dir = d.dir_prefix + "ports/" + std::to_string(tp.port);
    auto attr = [&](std::string_view file) -> std::optional<HeldFile> {
      std::string path = port_dir + "/" + std::string(file);
      if (!AttributePresent(fs, path)) return std::nullopt;
      return HeldFile(std::move(path));
    };
    p.state = attr("state");
    p.phys_state = attr("phys_state");
    p.rate = attr("rate");
    p.counters = DiscoverCounterFiles(fs, port_dir + "/counters", errors, d.complete);
    p.counters_ext = DiscoverCounterFiles(fs, port_dir + "/counters_ext", errors, d.complete);
    p.hw_counters = DiscoverCounterFiles(fs, port_dir + "/hw_counters", errors, d.complete);
  }
  return d;
}

}  // namespace

RdmaDevicesCollector::RdmaDevicesCollector()
    : state_(std::make_unique<State>()),
      netlink_(std::make_unique<RdmaNetlinkStats>(std::make_unique<MnlRdmaTransport>())) {}

RdmaDevicesCollector::RdmaDevicesCollector(std::unique_ptr<RdmaNetlinkStats> netlink)
    : state_(std::make_unique<State>()), netlink_(std::move(netlink)) {}
RdmaDevicesCollector::~RdmaDevicesCollector() = default;

std::size_t RdmaDevicesCollector::held_descriptors() const { return state_->layouts.HeldDescriptors(); }

Status RdmaDevicesCollector::Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& outcome) {
  State& st = *state_;
  const Topology& topology = ctx.topology;
  if (topology.failure) {
    st.layouts.Clear();
    return Error{*topology.failure};
  }
  outcome.errors.insert(outcome.errors.end(), topology.errors.begin(), topology.errors.end());
  st.layouts.SetRoot(ctx.fs.sysfs_root());  // another tree: nothing cached applies
  RdmaNetlinkStats* netlink = ctx.fs.asks_kernel() ? netlink_.get() : nullptr;

  // Devices that left the topology: close their descriptors.
  st.layouts.Retain([&](const std::string& name, const DeviceLayout&) { return topology.FindDevice(name) != nullptr; });

  RdmaDevicesFacts facts;
  const std::string class_dir = ctx.fs.Sys("class/infiniband");
  facts.devices.reserve(topology.devices.size());
  for (const TopologyDevice& td : topology.devices) {
    const std::string& name = td.name;
    RdmaDeviceFacts dev;
    std::vector<std::string> errors;
    bool discovered = false;  // in this attempt: its errors belong to this read
    auto discover = [&]() -> Result<DeviceLayout> {
      errors.clear();
      discovered = true;
      return DiscoverDevice(ctx.fs, class_dir, td, errors);
    };
    // Discovered once per Topology generation, and again when discovery met errors.
    auto fits = [&](const DeviceLayout& d) { return d.complete && d.generation == td.generation; };
    auto read = [&](DeviceLayout& d) -> std::optional<std::string> {
      if (discovered) {
        ShareEqualCounterNames(st, d);
      } else {
        errors.clear();  // a cached layout's read starts clean
      }
      discovered = false;
      dev = RdmaDeviceFacts{};
      DeviceReader reader(ctx.fs, st.read_buf, errors, d.dir, d.inode);
      dev.name = name;
      for (std::size_t i = 0; i < kDeviceAttrs.size() && !reader.gone(); ++i) {
        if (d.stable_values[i]) {
          dev.*kDeviceAttrs[i].member = d.stable_values[i];
          continue;
        }
        if (!d.attrs[i]) continue;
        if (auto v = reader.Read(*d.attrs[i])) {
          dev.*kDeviceAttrs[i].member = std::string(Trim(*v));
          if (kDeviceAttrs[i].stable) {
            d.stable_values[i] = dev.*kDeviceAttrs[i].member;
            d.attrs[i].reset();  // closes the descriptor
          }
        }
      }
      dev.ports.reserve(d.ports.size());
      for (std::size_t i = 0; i < d.ports.size(); ++i) {
        PortLayout& p = d.ports[i];
        if (reader.gone()) break;
        RdmaPortFacts& port = dev.ports.emplace_back();
        // The layout's ports are the Topology's, in order (one discovery per generation).
        if (i < td.ports.size() && td.ports[i].port == p.port) {
          static_cast<TopologyPort&>(port) = td.ports[i];
        } else {
          port.port = p.port;
        }
        port.device = name;
        ReadEnum(reader, p.state, port.state);
        ReadEnum(reader, p.phys_state, port.phys_state);
        if (p.rate) {
          if (auto v = reader.Read(*p.rate)) {
            port.rate_bytes_per_second = ParseIbRateBytesPerSecond(*v);
            if (!port.rate_bytes_per_second) reader.Unparseable(p.rate->path(), *v);
          }
        }
        ReadCounters(reader, p.counters, port.counters);
        ReadCounters(reader, p.counters_ext, port.counters_ext);
        if (netlink != nullptr && !p.hw_counters_from_files && !p.hw_counters.files.empty()) {
          if (auto answer = netlink->PortCounters(name, p.port)) {
            SetCounters(reader, p.hw_counters, *answer, port.hw_counters);
          } else {
            errors.push_back("hw_counters over RDMA netlink: " + answer.error().message +
                             "; reading the files for this port from now on");
            p.hw_counters_from_files = true;
            ReadCounters(reader, p.hw_counters, port.hw_counters);
          }
        } else {
          ReadCounters(reader, p.hw_counters, port.hw_counters);
        }
      }
      if (reader.gone()) return reader.gone_message();
      return std::nullopt;
    };
    LayoutUse<DeviceLayout> use = st.layouts.Read(name, {}, discover, fits, read);
    if (use.gone) {
      st.layouts.Erase(name);
      outcome.errors.push_back("device " + name + " skipped, it vanished while being read: " + *use.gone);
      continue;
    }
    for (std::string& e : errors) outcome.errors.push_back(std::move(e));
    facts.devices.push_back(std::move(dev));
  }
  snapshot.Put(std::move(facts));
  return Status::Ok();
}

void RdmaDevicesCollector::Render(const Snapshot& snapshot, MetricSink& sink) const {
  const RdmaDevicesFacts* facts = snapshot.Get<RdmaDevicesFacts>();
  if (facts == nullptr) return;
  RenderDeviceMetrics(*facts, sink);
}

RDMAHD_REGISTER_COLLECTOR("devices", RdmaDevicesCollector,
                          "RDMA devices and ports from /sys/class/infiniband: info, state, rate, GIDs, counters");

}  // namespace rdmahd
