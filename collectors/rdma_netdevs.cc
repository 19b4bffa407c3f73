#include "collectors/rdma_netdevs.h"

#include <algorithm>
#include <set>

#include "collectors/rdma_devices.h"
#include "collectors/roce_qos.h"
#include "collectors/snapshot.h"
#include "common/parse.h"

namespace rdmahd {
namespace {

// device/net/* fallback for Ethernet ports whose GID table named no netdev: the netdev whose
// dev_port is P-1, or every netdev of a single-port device.
void AddFallbackNetdevs(const NodeFs& fs, const std::string& dev, const std::string& dev_dir, const std::vector<int>& unresolved,
                        std::size_t port_count, std::vector<RdmaNetdev>& out, FsWork& work) {
  if (unresolved.empty()) return;
  ++work.listings;
  auto nets = fs.ListDir(dev_dir + "/device/net");
  if (!nets) return;  // not a PCI function with netdevs (rxe has no device/ link)
  for (const std::string& net : *nets) {
    std::optional<std::uint64_t> dev_port;
    ++work.opens;
    if (auto text = fs.ReadFile(dev_dir + "/device/net/" + net + "/dev_port")) dev_port = ParseU64(*text);
    for (int port : unresolved) {
      bool belongs = dev_port ? static_cast<int>(*dev_port) == port - 1 : port_count == 1;
      if (belongs) out.push_back({dev, port, net});
    }
  }
}

void SortUnique(std::vector<RdmaNetdev>& out) {
  std::sort(out.begin(), out.end(), [](const RdmaNetdev& a, const RdmaNetdev& b) {
    return std::tie(a.device, a.port, a.netdev) < std::tie(b.device, b.port, b.netdev);
  });
  out.erase(std::unique(out.begin(), out.end()), out.end());
}

std::vector<RdmaNetdev> Discover(const NodeFs& fs, const DeviceFilter& filter, std::vector<std::string>& errors,
                                 FsWork& work) {
  std::vector<RdmaNetdev> out;
  const std::string ib = fs.Sys("class/infiniband");
  ++work.probes;
  if (!fs.IsDir(ib)) return out;
  ++work.listings;
  auto devices = fs.ListDir(ib);
  if (!devices) {
    errors.push_back(devices.error().message);
    return out;
  }
  for (const std::string& dev : *devices) {
    if (!filter.Matches(dev)) continue;
    const std::string dev_dir = ib + "/" + dev;
    ++work.listings;
    auto ports = fs.ListDir(dev_dir + "/ports");
    if (!ports) {
      errors.push_back(dev + ": " + ports.error().message);
      continue;
    }
    std::vector<int> ethernet_ports;
    for (const std::string& p : *ports) {
      auto port = ParseU64(p);
      if (!port || *port == 0 || *port > 255) continue;
      const std::string port_dir = dev_dir + "/ports/" + p;
      ++work.opens;
      auto ll = fs.ReadFile(port_dir + "/link_layer");
      if (!ll) {
        errors.push_back(dev + "/" + p + ": " + ll.error().message);
        continue;
      }
      if (Trim(*ll) != "Ethernet") continue;
      ethernet_ports.push_back(static_cast<int>(*port));

      std::set<std::string> names;
      ++work.listings;
      auto ndevs = fs.ListDir(port_dir + "/gid_attrs/ndevs");
      if (ndevs) {
        for (const std::string& n : *ndevs) {
          ++work.opens;
          auto name = fs.ReadFile(port_dir + "/gid_attrs/ndevs/" + n);
          if (name && !Trim(*name).empty()) names.insert(std::string(Trim(*name)));
        }
      }
      for (const auto& n : names) out.push_back({dev, static_cast<int>(*port), n});
    }

    // Fallback for Ethernet ports the GID table named no netdev for.
    std::vector<int> unresolved;
    for (int port : ethernet_ports) {
      bool found = std::any_of(out.begin(), out.end(),
                               [&](const RdmaNetdev& r) { return r.device == dev && r.port == port; });
      if (!found) unresolved.push_back(port);
    }
    AddFallbackNetdevs(fs, dev, dev_dir, unresolved, ports->size(), out, work);
  }
  SortUnique(out);
  return out;
}

// An Ethernet port of the devices collector's facts: the netdevs its GIDs name (added to `out`);
// false when they name none.
bool AddGidNetdevs(const RdmaDeviceFacts& dev, const RdmaPortFacts& port, std::vector<RdmaNetdev>& out) {
  bool found = false;
  for (const RdmaGid& gid : port.gids) {
    if (gid.ndev.empty()) continue;
    out.push_back({dev.name, static_cast<int>(port.port), gid.ndev});
    found = true;
  }
  return found;
}

}  // namespace

std::vector<RdmaNetdev> DiscoverRdmaNetdevs(const NodeFs& fs, const DeviceFilter& filter,
                                            std::vector<std::string>& errors) {
  FsWork work;
  return Discover(fs, filter, errors, work);
}

std::vector<RdmaNetdev> RdmaNetdevsOf(const Snapshot& snapshot, const NodeFs& fs,
                                      const DeviceFilter& filter, std::vector<std::string>& errors) {
  if (const auto* netdevs = snapshot.Get<RdmaNetdevFacts>()) return netdevs->links;
  const auto* devices = snapshot.Get<RdmaDevicesFacts>();
  if (devices == nullptr) return DiscoverRdmaNetdevs(fs, filter, errors);
  std::vector<RdmaNetdev> out;
  const std::string ib = fs.Sys("class/infiniband");
  FsWork work;
  for (const RdmaDeviceFacts& dev : devices->devices) {  // already filtered by config.devices
    std::vector<int> unresolved;
    for (const RdmaPortFacts& port : dev.ports) {
      if (port.IsEthernet() && !AddGidNetdevs(dev, port, out)) unresolved.push_back(static_cast<int>(port.port));
    }
    AddFallbackNetdevs(fs, dev.name, ib + "/" + dev.name, unresolved, dev.ports.size(), out, work);
  }
  SortUnique(out);
  return out;
}

std::vector<RdmaNetdev> RdmaNetdevLinker::Links(const Snapshot& snapshot, const NodeFs& fs,
                                                const DeviceFilter& filter, std::vector<std::string>& errors) {
  if (const auto* netdevs = snapshot.Get<RdmaNetdevFacts>()) return netdevs->links;
  const auto now = now_();
  if (!valid_ || fs.sysfs_root() != sysfs_root_ || now - listed_at_ >= kNetdevRelistInterval) {
    fallbacks_.clear();
    have_discovered_ = false;
    valid_ = true;
    listed_at_ = now;
    sysfs_root_ = fs.sysfs_root();
  }
  const auto* devices = snapshot.Get<RdmaDevicesFacts>();
  if (devices == nullptr) {
    // No devices collector: no signal for new devices, so the whole discovery ages out instead.
    if (!have_discovered_ || filter_include_ != filter.include || filter_exclude_ != filter.exclude) {
      discovered_errors_.clear();
      discovered_ = Discover(fs, filter, discovered_errors_, work_);
      filter_include_ = filter.include;
      filter_exclude_ = filter.exclude;
      have_discovered_ = true;
    }
    errors.insert(errors.end(), discovered_errors_.begin(), discovered_errors_.end());
    return discovered_;
  }
  have_discovered_ = false;
  std::vector<RdmaNetdev> out;
  const std::string ib = fs.Sys("class/infiniband");
  std::vector<std::string> seen;
  for (const RdmaDeviceFacts& dev : devices->devices) {  // already filtered by config.devices
    std::vector<int> unresolved;
    for (const RdmaPortFacts& port : dev.ports) {
      if (port.IsEthernet() && !AddGidNetdevs(dev, port, out)) unresolved.push_back(static_cast<int>(port.port));
    }
    if (unresolved.empty()) continue;
    seen.push_back(dev.name);
    auto it = fallbacks_.find(dev.name);
    if (it == fallbacks_.end() || it->second.unresolved != unresolved || it->second.port_count != dev.ports.size()) {
      Fallback fb{unresolved, dev.ports.size(), {}};
      AddFallbackNetdevs(fs, dev.name, ib + "/" + dev.name, unresolved, dev.ports.size(), fb.links, work_);
      it = fallbacks_.insert_or_assign(dev.name, std::move(fb)).first;
    }
    out.insert(out.end(), it->second.links.begin(), it->second.links.end());
  }
  std::erase_if(fallbacks_, [&](const auto& kv) { return std::find(seen.begin(), seen.end(), kv.first) == seen.end(); });
  SortUnique(out);
  return out;
}

}  // namespace rdmahd
