#include "collectors/topology_discovery.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>

#include "collectors/device_reader.h"
#include "collectors/gid_table.h"
#include "common/layout_cache.h"
#include "common/parse.h"
#include "config/config.h"
#include "parsers/ib_sysfs_parse.h"

namespace rdmahd {
namespace {

bool IsHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// "0000:3b:00.0" (domain:bus:device.function).
bool IsPciAddress(std::string_view s) {
  if (s.size() != 12 || s[4] != ':' || s[7] != ':' || s[10] != '.') return false;
  for (std::size_t i : {0, 1, 2, 3, 5, 6, 8, 9, 11}) {
    if (!IsHex(s[i])) return false;
  }
  return true;
}

struct PortLayout {
  std::uint32_t port = 0;
  std::string dir;
  // Read until one read succeeds, then kept (fixed by the port type; mlx4's IB/Ethernet switch
  // re-registers the device) and the descriptor closed.
  std::optional<HeldFile> link_layer;
  std::optional<std::string> link_layer_value;
  GidTable gids;
};

}  // namespace

struct TopologyDiscovery::DeviceLayout {
  std::string dir;
  ino_t inode = 0;
  std::uint64_t generation = 0;
  std::optional<int> numa_node;
  std::optional<std::string> pci_address;
  std::optional<std::string> device_dir;
  std::vector<PortLayout> ports;
  std::optional<std::string> ports_error;  // ports/ could not be listed (not: does not exist)
  bool complete = true;  // false: discovery hit errors; rediscover next collection
  // The devices collector's files; replaced (never changed) when a counter directory could not be
  // listed, so the device keeps its generation.
  std::shared_ptr<RdmaDeviceFiles> files;
  // device/net answer for the Ethernet ports whose GIDs named no netdev.
  std::vector<int> fallback_for;
  std::vector<RdmaNetdev> fallback;
  std::chrono::steady_clock::time_point listed_at{};

  std::size_t HeldDescriptors() const {
    std::size_t n = 0;
    for (const PortLayout& p : ports) n += CountOpen(p.link_layer) + p.gids.held_descriptors();
    return n + (files ? files->HeldDescriptors() : 0);
  }
};

namespace {

Result<TopologyDiscovery::DeviceLayout> DiscoverDevice(const NodeFs& fs, const std::string& dir,
                                                       std::vector<std::string>& errors, FsWork& work) {
  TopologyDiscovery::DeviceLayout layout;
  TopologyDiscovery::DeviceLayout* d = &layout;
  d->dir = dir;
  struct stat st {};
  ++work.probes;
  if (::stat(dir.c_str(), &st) != 0) return Error::FromErrno("stat " + dir, errno);
  d->inode = st.st_ino;
  // The parent device (PCI function) and its NUMA node do not change while the device exists.
  if (auto link = fs.ReadLink(dir + "/device"); link.ok()) {
    std::string_view target = *link;
    while (!target.empty() && target.back() == '/') target.remove_suffix(1);
    std::string_view base = target.substr(target.rfind('/') + 1);
    if (IsPciAddress(base)) d->pci_address = std::string(base);
  }
  ++work.probes;
  if (std::string device = dir + "/device"; fs.IsDir(device)) d->device_dir = std::move(device);
  ++work.opens;
  if (auto numa = fs.ReadFile(dir + "/device/numa_node"); numa.ok()) {
    if (auto v = ParseI64(*numa)) d->numa_node = static_cast<int>(*v);
  }
  ++work.listings;
  auto ports = fs.ListDir(dir + "/ports");
  if (!ports.ok()) {
    if (IsGoneErrno(ports.error().errno_value) && !fs.Exists(dir)) return ports.error();
    if (ports.error().errno_value != ENOENT) {
      errors.push_back(ports.error().message);
      d->ports_error = ports.error().message;
      d->complete = false;
    }
    return layout;
  }
  for (const std::string& n : *ports) {
    auto num = ParseSysfsIndex(n);
    if (!num) continue;
    PortLayout& p = d->ports.emplace_back();
    p.port = *num;
    p.dir = dir + "/ports/" + n;
    const std::string ll = p.dir + "/link_layer";
    if (AttributePresent(fs, ll)) p.link_layer.emplace(ll);
    ++work.listings;
    p.gids = GidTable::Discover(fs, p.dir, errors, d->complete);
  }
  std::sort(d->ports.begin(), d->ports.end(), [](const PortLayout& a, const PortLayout& b) { return a.port < b.port; });
  return layout;
}

}  // namespace

void TopologyDiscovery::DiscoverFiles(const NodeFs& fs, DeviceLayout& layout) {
  std::vector<std::uint32_t> ports;
  ports.reserve(layout.ports.size());
  for (const PortLayout& p : layout.ports) ports.push_back(p.port);
  layout.files = std::make_shared<RdmaDeviceFiles>(DiscoverRdmaDeviceFiles(fs, layout.dir, layout.inode, ports));
}

TopologyDiscovery::TopologyDiscovery(SteadyNow now) : now_(std::move(now)) {}
TopologyDiscovery::~TopologyDiscovery() = default;

std::size_t TopologyDiscovery::held_descriptors() const { return layouts_.HeldDescriptors(); }

Topology TopologyDiscovery::Discover(const NodeFs& fs, const Config& config) {
  Topology topo;
  layouts_.SetRoot(fs.sysfs_root());  // another tree: nothing cached applies
  const bool full_gid_rescan = collections_ % kGidFullRescanInterval == 0;
  ++collections_;
  const auto now = now_();

  // Listed, and each device's directory stat()ed, on every collection by design (not FsWork).
  const std::string class_dir = fs.Sys("class/infiniband");
  auto names = fs.ListDir(class_dir);
  if (!names.ok()) {
    layouts_.Clear();
    // No RDMA core loaded: zero devices, not a failure.
    if (names.error().errno_value != ENOENT) topo.failure = names.error().message;
    return topo;
  }
  topo.class_dir_present = true;

  std::vector<std::string> wanted;
  wanted.reserve(names->size());
  for (std::string& n : *names) {
    if (config.devices.Matches(n)) wanted.push_back(std::move(n));
  }
  layouts_.Retain([&](const std::string& n, const DeviceLayout&) { return std::binary_search(wanted.begin(), wanted.end(), n); });

  topo.devices.reserve(wanted.size());
  for (const std::string& name : wanted) {
    TopologyDevice dev;
    std::vector<std::string> errors;
    bool discovered = false;  // in this attempt: its errors belong to this read
    auto discover = [&]() -> Result<DeviceLayout> {
      errors.clear();
      discovered = true;
      auto layout = DiscoverDevice(fs, class_dir + "/" + name, errors, work_);
      if (layout.ok()) {
        layout->generation = next_generation_++;
        layout->listed_at = {};  // list device/net for its Ethernet ports on the first read
        DiscoverFiles(fs, *layout);
      }
      return layout;
    };
    // Rediscovered when it met errors last time or its directory was re-created under the name.
    auto fits = [](const DeviceLayout& l) { return l.complete && DirInode(l.dir) == std::optional<ino_t>(l.inode); };
    auto read = [&](DeviceLayout& l) -> std::optional<std::string> {
      if (!discovered) {
        errors.clear();  // a cached layout's read starts clean
        if (!l.files->discovery_errors.empty()) DiscoverFiles(fs, l);  // listed again, as it met errors
      }
      discovered = false;
      dev = TopologyDevice{};
      const bool relist = now - l.listed_at >= kNetdevRelistInterval;
      DeviceReader reader(fs, read_buf_, errors, l.dir, l.inode);
      dev.name = name;
      dev.numa_node = l.numa_node;
      dev.pci_address = l.pci_address;
      dev.device_dir = l.device_dir;
      dev.ports_unreadable = l.ports_error;
      dev.generation = l.generation;
      dev.files = l.files;
      dev.ports.reserve(l.ports.size());
      for (PortLayout& p : l.ports) {
        TopologyPort& port = dev.ports.emplace_back();
        port.port = p.port;
        if (p.link_layer_value) {
          port.link_layer = p.link_layer_value;
        } else if (p.link_layer) {
          if (auto v = reader.Read(*p.link_layer)) {
            port.link_layer = std::string(Trim(*v));
            p.link_layer_value = port.link_layer;
            p.link_layer.reset();  // closes the descriptor
          }
        }
        if (reader.gone()) break;
        if (relist) p.gids.RefreshAttributes();
        p.gids.Read(full_gid_rescan, path_buf_, reader, errors, port);
        if (reader.gone()) break;
      }
      if (reader.gone()) return reader.gone_message();
      return std::nullopt;
    };
    LayoutUse<DeviceLayout> use = layouts_.Read(name, now, discover, fits, read);
    if (use.gone) {
      layouts_.Erase(name);
      topo.errors.push_back("device " + name + " skipped, it vanished while being read: " + *use.gone);
      continue;
    }
    DeviceLayout* d = use.layout;
    for (std::string& e : errors) topo.errors.push_back(std::move(e));

    // Port -> netdev links: every netdev the GIDs name, else device/net.
    std::vector<int> unresolved;
    for (const TopologyPort& port : dev.ports) {
      if (!port.IsEthernet()) continue;
      bool found = false;
      for (const RdmaGid& gid : port.gids) {
        if (gid.ndev.empty()) continue;
        topo.links.push_back({name, static_cast<int>(port.port), gid.ndev});
        found = true;
      }
      if (!found) unresolved.push_back(static_cast<int>(port.port));
    }
    if (unresolved != d->fallback_for || (!unresolved.empty() && now - d->listed_at >= kNetdevRelistInterval)) {
      d->fallback = FallbackNetdevs(fs, name, d->dir, unresolved, d->ports.size(), work_);
      d->fallback_for = unresolved;
    }
    if (now - d->listed_at >= kNetdevRelistInterval) d->listed_at = now;
    topo.links.insert(topo.links.end(), d->fallback.begin(), d->fallback.end());
    topo.devices.push_back(std::move(dev));
  }
  std::sort(topo.links.begin(), topo.links.end(), [](const RdmaNetdev& a, const RdmaNetdev& b) {
    return std::tie(a.device, a.port, a.netdev) < std::tie(b.device, b.port, b.netdev);
  });
  topo.links.erase(std::unique(topo.links.begin(), topo.links.end()), topo.links.end());
  topo.links.shrink_to_fit();  // kept in the snapshot: not the capacity its growth left
  return topo;
}

RDMAHD_REGISTER_TOPOLOGY_SOURCE("sysfs", TopologyDiscovery,
                                "RDMA devices, ports, GIDs, port netdevs and PCI/NUMA placement from sysfs");

}  // namespace rdmahd
