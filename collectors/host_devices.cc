#include "collectors/host_devices.h"


namespace rdmahd {

namespace {
void ReplaceRoot(std::string& text, const std::string& root, std::string_view kernel) {
  std::string r = root;
  while (r.size() > 1 && r.back() == '/') r.pop_back();
  if (r.empty() || r == kernel) return;
  std::size_t at = text.find(r);
  while (at != std::string::npos) {
    const std::size_t end = at + r.size();
    if (end < text.size() && text[end] != '/') {  // a longer name that merely starts with the root
      at = text.find(r, at + 1);
      continue;
    }
    text.replace(at, r.size(), kernel);
    at = text.find(r, at + kernel.size());
  }
}
}  // namespace

std::string KernelPaths(const NodeFs& fs, std::string text) {
  // Longest root first: a dev root beside the sysfs root shares its parent, not its prefix.
  ReplaceRoot(text, fs.sysfs_root(), "/sys");
  ReplaceRoot(text, fs.procfs_root(), "/proc");
  ReplaceRoot(text, fs.dev_root(), "/dev");
  return text;
}

std::optional<std::string> HostRdmaDevice::SoftwareDriverModule() const {
  if (name.starts_with("rxe")) return "rdma_rxe";
  if (name.starts_with("siw")) return "siw";
  return std::nullopt;
}

std::string HostRdmaDevice::NoPciFunctionReason() const {
  if (SoftwareDriverModule()) return name + " has no device/: a software RDMA device";
  return name + " has no device/ link: not captured, or a driver without one";
}

std::vector<HostRdmaDevice> HostRdmaDevices(const Topology& topology) {
  std::vector<HostRdmaDevice> out;
  for (const TopologyDevice& t : topology.devices) {
    HostRdmaDevice& d = out.emplace_back();
    d.name = t.name;
    d.topology = &t;
    d.pci_address = t.pci_address;
    d.device_dir = t.device_dir;  // looked up once per discovery of the device, not per collection
    for (const TopologyPort& p : t.ports) d.ports.push_back(HostRdmaPort{p.port, p.link_layer});
  }
  return out;
}

}  // namespace rdmahd
