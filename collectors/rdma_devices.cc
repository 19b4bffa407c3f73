#include "collectors/rdma_devices.h"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <utility>

#include "collectors/device_metrics.h"
#include "collectors/device_reader.h"
#include "common/parse.h"
#include "parsers/ib_sysfs_parse.h"

namespace rdmahd {
namespace {

// What each of kRdmaDeviceAttributeFiles is read into. `stable`: fixed while the device object
// exists (see the header), read once.
struct DeviceAttr {
  std::optional<std::string> RdmaDeviceFacts::*member;
  bool stable;
};
constexpr std::array<DeviceAttr, kRdmaDeviceAttributeFiles.size()> kDeviceAttrs = {{
    {&RdmaDeviceFacts::fw_ver, false},  // live firmware activation changes it
    {&RdmaDeviceFacts::board_id, true},
    {&RdmaDeviceFacts::hca_type, true},
    {&RdmaDeviceFacts::node_guid, true},
    {&RdmaDeviceFacts::sys_image_guid, true},
    {&RdmaDeviceFacts::node_type, true},
}};

// Where one counter directory's values go: `values`, and the names of files whose text is not a
// counter, as "<folder>/<file>" (RdmaPortFacts::unparseable).
struct CounterOut {
  std::string_view folder;  // "counters/", "counters_ext/", "hw_counters/"
  CounterValues& values;
  std::vector<std::string>& unparseable;
};

// Reads the values of one counter directory through held descriptors.
void ReadCounterFile(DeviceReader& reader, RdmaCounterFiles& dir, std::size_t i, const CounterOut& out) {
  std::optional<std::string_view> text = reader.Read(dir, i);
  if (!text) {
    // Unreadable (over the read cap, a dangling link): as absent as text that is no number, and
    // named the same way. A read in backoff is named by the backoff; a device gone is gone.
    if (reader.last_read_failed()) out.unparseable.push_back(std::string(out.folder) + dir.name(i));
    return;
  }
  // A number first: "N/A (no PMA)" (absent, not an error) is the exception, and this runs for
  // every counter file on every scrape.
  if (std::optional<std::uint64_t> v = ParseU64(*text)) {
    out.values.Set(i, *v);
    return;
  }
  if (IsNotAvailableValue(*text)) return;
  // Not a whole number from 0 to 2^64-1 ("13abc", "-1", 60 KB of digits): this value is absent
  // and named, so that the checks it feeds say unknown instead of judging the port without it.
  reader.Unparseable(dir.path(i), *text);
  out.unparseable.push_back(std::string(out.folder) + dir.name(i));
}

void ReadCounters(DeviceReader& reader, RdmaCounterFiles& dir, const CounterOut& out) {
  if (dir.empty()) return;
  out.values = CounterValues(dir.names());
  for (std::size_t i = 0; i < dir.size(); ++i) ReadCounterFile(reader, dir, i, out);
}

// hw counters from an RDMA netlink answer, for the names `dir` lists; a listed name the answer
// lacks is read from its file.
void SetCounters(DeviceReader& reader, RdmaCounterFiles& dir, const std::vector<NldevHwCounter>& answer,
                 const CounterOut& out) {
  out.values = CounterValues(dir.names());
  const CounterValues::Names& names = *dir.names();
  for (const NldevHwCounter& c : answer) {
    auto it = std::lower_bound(names.begin(), names.end(), c.name);
    if (it != names.end() && *it == c.name) out.values.Set(static_cast<std::size_t>(it - names.begin()), c.value);
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (!out.values.value(i)) ReadCounterFile(reader, dir, i, out);
  }
}

void ReadEnum(DeviceReader& reader, std::optional<HeldFile>& file, std::optional<SysfsEnumValue>& out) {
  if (!file) return;
  if (auto v = reader.Read(*file)) {
    out = ParseSysfsEnum(*v);
    if (!out) reader.Unparseable(file->path(), *v);
  }
}

// The files of `p` in `backoff`, by their name in the port's folder.
void NameBackedOffFiles(const ReadBackoff& backoff, const RdmaPortFiles& p, std::vector<BackedOffRead>& out) {
  auto add = [&](ReadBackoff::Key f, std::string_view name) {
    if (const ReadBackoff::Entry* e = backoff.Find(f)) {
      out.push_back({std::string(name), std::string(ReadBackoff::kErrnoNames[ReadBackoff::ErrnoIndex(e->errno_value)])});
    }
  };
  for (const auto& [file, name] : {std::pair{&p.state, "state"}, {&p.phys_state, "phys_state"}, {&p.rate, "rate"}}) {
    if (*file) add(ReadBackoff::KeyOf(**file), name);
  }
  for (const auto& [dir, name] : {std::pair{&p.counters, "counters/"}, {&p.counters_ext, "counters_ext/"},
                                  {&p.hw_counters, "hw_counters/"}}) {
    for (std::size_t i = 0; i < dir->size(); ++i) add(ReadBackoff::KeyOf(*dir, i), name + dir->name(i));
  }
}

}  // namespace

struct RdmaDevicesCollector::State {
  std::string read_buf;  // content of the last held read
};

RdmaDevicesCollector::RdmaDevicesCollector()
    : RdmaDevicesCollector(std::make_unique<RdmaNetlinkStats>(std::make_unique<MnlRdmaTransport>())) {}

RdmaDevicesCollector::RdmaDevicesCollector(std::unique_ptr<RdmaNetlinkStats> netlink)
    : RdmaDevicesCollector(std::move(netlink), std::chrono::steady_clock::now) {}
RdmaDevicesCollector::RdmaDevicesCollector(std::unique_ptr<RdmaNetlinkStats> netlink, SteadyNow now)
    : state_(std::make_unique<State>()), netlink_(std::move(netlink)), now_(std::move(now)) {}
RdmaDevicesCollector::~RdmaDevicesCollector() = default;

namespace {

// The files of `td` as the topology stage discovered them, or (a topology source that does not
// read sysfs, or a device re-created since the topology stage read it) discovered now, for this
// collection only: the topology stage discovers the new device object on its next collection.
std::shared_ptr<RdmaDeviceFiles> DiscoverNow(const NodeFs& fs, const TopologyDevice& td,
                                             std::optional<std::string>& gone) {
  const std::string dir = fs.Sys("class/infiniband") + "/" + td.name;
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    gone = Error::FromErrno("stat " + dir, errno).message;
    return nullptr;
  }
  std::vector<std::uint32_t> ports;
  ports.reserve(td.ports.size());
  for (const TopologyPort& p : td.ports) ports.push_back(p.port);
  return std::make_shared<RdmaDeviceFiles>(DiscoverRdmaDeviceFiles(fs, dir, st.st_ino, ports));
}

}  // namespace

Status RdmaDevicesCollector::Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& outcome) {
  State& st = *state_;
  const Topology& topology = ctx.topology;
  if (topology.failure) return Error{*topology.failure};
  outcome.errors.insert(outcome.errors.end(), topology.errors.begin(), topology.errors.end());
  RdmaNetlinkStats* netlink = ctx.fs.asks_kernel() ? netlink_.get() : nullptr;

  const auto now = now_();
  RdmaDevicesFacts facts;
  facts.devices.reserve(topology.devices.size());
  for (const TopologyDevice& td : topology.devices) {
    const std::string& name = td.name;
    RdmaDeviceFacts dev;
    std::vector<std::string> errors;
    // Reads the device through `d`; nullopt when read, else why the device is gone.
    auto read = [&](RdmaDeviceFiles& d) -> std::optional<std::string> {
      errors = d.discovery_errors;
      dev = RdmaDeviceFacts{};
      DeviceReader reader(ctx.fs, st.read_buf, errors, d.dir, d.inode);
      reader.UseBackoff(d.backoff, now);
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
        RdmaPortFiles& p = d.ports[i];
        if (reader.gone()) break;
        RdmaPortFacts& port = dev.ports.emplace_back();
        // The files' ports are the Topology's, in order.
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
        ReadCounters(reader, p.counters, {"counters/", port.counters, port.unparseable});
        ReadCounters(reader, p.counters_ext, {"counters_ext/", port.counters_ext, port.unparseable});
        const CounterOut hw{"hw_counters/", port.hw_counters, port.unparseable};
        if (netlink != nullptr && !p.hw_counters_from_files && !p.hw_counters.empty()) {
          if (auto answer = netlink->PortCounters(name, p.port)) {
            SetCounters(reader, p.hw_counters, *answer, hw);
          } else {
            errors.push_back("hw_counters over RDMA netlink: " + answer.error().message +
                             "; reading the files for this port from now on");
            p.hw_counters_from_files = true;
            ReadCounters(reader, p.hw_counters, hw);
          }
        } else {
          ReadCounters(reader, p.hw_counters, hw);
        }
        if (!d.backoff.empty()) NameBackedOffFiles(d.backoff, p, port.read_backoff);
      }
      if (reader.gone()) return reader.gone_message();
      dev.read_backoff_files = d.backoff.entries().size();
      for (std::size_t i = 0; i < ReadBackoff::kErrnos.size(); ++i) {
        if (d.backoff.read_errors()[i] != 0) {
          dev.read_errors.emplace_back(ReadBackoff::kErrnoNames[i], d.backoff.read_errors()[i]);
        }
      }
      return std::nullopt;
    };
    // The gone-retry: a device re-created since the topology stage read it is discovered and read
    // again at once, so it costs no values.
    std::optional<std::string> gone;
    std::shared_ptr<RdmaDeviceFiles> fresh;
    if (td.files) gone = read(*td.files);
    if (!td.files || gone) {
      gone.reset();
      fresh = DiscoverNow(ctx.fs, td, gone);
      if (fresh) gone = read(*fresh);
    }
    if (gone) {
      outcome.errors.push_back("device " + name + " skipped, it vanished while being read: " + *gone);
      continue;
    }
    for (std::string& e : errors) outcome.errors.push_back(std::move(e));
    dev.ports_unreadable = td.ports_unreadable;
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
