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
                        std::size_t port_count, std::vector<RdmaNetdev>& out) {
  if (unresolved.empty()) return;
  auto nets = fs.ListDir(dev_dir + "/device/net");
  if (!nets) return;  // not a PCI function with netdevs (rxe has no device/ link)
  for (const std::string& net : *nets) {
    std::optional<std::uint64_t> dev_port;
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

}  // namespace

std::vector<RdmaNetdev> DiscoverRdmaNetdevs(const NodeFs& fs, const DeviceFilter& filter,
                                            std::vector<std::string>& errors) {
  std::vector<RdmaNetdev> out;
  const std::string ib = fs.Sys("class/infiniband");
  if (!fs.IsDir(ib)) return out;
  auto devices = fs.ListDir(ib);
  if (!devices) {
    errors.push_back(devices.error().message);
    return out;
  }
  for (const std::string& dev : *devices) {
    if (!filter.Matches(dev)) continue;
    const std::string dev_dir = ib + "/" + dev;
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
      auto ll = fs.ReadFile(port_dir + "/link_layer");
      if (!ll) {
        errors.push_back(dev + "/" + p + ": " + ll.error().message);
        continue;
      }
      if (Trim(*ll) != "Ethernet") continue;
      ethernet_ports.push_back(static_cast<int>(*port));

      std::set<std::string> names;
      auto ndevs = fs.ListDir(port_dir + "/gid_attrs/ndevs");
      if (ndevs) {
        for (const std::string& n : *ndevs) {
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
    AddFallbackNetdevs(fs, dev, dev_dir, unresolved, ports->size(), out);
  }
  SortUnique(out);
  return out;
}

std::vector<RdmaNetdev> RdmaNetdevsOf(const Snapshot& snapshot, const NodeFs& fs,
                                      const DeviceFilter& filter, std::vector<std::string>& errors) {
  if (const auto* netdevs = snapshot.Get<RdmaNetdevFacts>()) return netdevs->links;
  const auto* devices = snapshot.Get<RdmaDevicesFacts>();
  if (devices == nullptr) return DiscoverRdmaNetdevs(fs, filter, errors);
  std::vector<RdmaNetdev> out;
  const std::string ib = fs.Sys("class/infiniband");
  for (const RdmaDeviceFacts& dev : devices->devices) {  // already filtered by config.devices
    std::vector<int> unresolved;
    for (const RdmaPortFacts& port : dev.ports) {
      if (!port.IsEthernet()) continue;
      const int p = static_cast<int>(port.port);
      bool found = false;
      for (const RdmaGid& gid : port.gids) {
        if (gid.ndev.empty()) continue;
        out.push_back({dev.name, p, gid.ndev});
        found = true;
      }
      if (!found) unresolved.push_back(p);
    }
    AddFallbackNetdevs(fs, dev.name, ib + "/" + dev.name, unresolved, dev.ports.size(), out);
  }
  SortUnique(out);
  return out;
}

}  // namespace rdmahd
