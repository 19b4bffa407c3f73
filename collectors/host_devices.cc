#include "collectors/host_devices.h"

#include <algorithm>
#include <cerrno>

#include "common/parse.h"

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

std::vector<HostRdmaDevice> ListHostRdmaDevices(const NodeFs& fs, const DeviceFilter& filter,
                                                std::vector<std::string>& errors) {
  std::vector<HostRdmaDevice> out;
  const std::string ib = fs.Sys("class/infiniband");
  auto names = fs.ListDir(ib);
  if (!names) {
    if (names.error().errno_value != ENOENT) errors.push_back(names.error().message);
    return out;
  }
  for (const std::string& name : *names) {
    if (!filter.Matches(name)) continue;
    HostRdmaDevice d;
    d.name = name;
    const std::string dir = ib + "/" + name;
    const std::string device = dir + "/device";
    if (fs.IsDir(device)) {
      d.device_dir = device;
      if (auto link = fs.ReadLink(device)) {
        std::string_view target = Trim(*link);
        while (!target.empty() && target.back() == '/') target.remove_suffix(1);
        d.pci_address = std::string(target.substr(target.rfind('/') + 1));
      }
    }
    auto ports = fs.ListDir(dir + "/ports");
    if (!ports) {
      if (ports.error().errno_value != ENOENT) errors.push_back(name + ": " + ports.error().message);
    } else {
      for (const std::string& p : *ports) {
        auto n = ParseU64(p);
        if (!n || *n == 0 || *n > 255 || std::to_string(*n) != p) continue;
        HostRdmaPort port;
        port.number = static_cast<std::uint32_t>(*n);
        if (auto ll = fs.ReadFile(dir + "/ports/" + p + "/link_layer")) {
          port.link_layer = std::string(Trim(*ll));
        } else {
          errors.push_back(name + "/" + p + ": " + ll.error().message);
        }
        d.ports.push_back(std::move(port));
      }
      std::sort(d.ports.begin(), d.ports.end(),
                [](const HostRdmaPort& a, const HostRdmaPort& b) { return a.number < b.number; });
    }
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace rdmahd
