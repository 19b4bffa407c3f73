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

std::optional<std::string> SoftwareDriverModule(const TopologyDevice& d) {
  if (d.name.starts_with("rxe")) return "rdma_rxe";
  if (d.name.starts_with("siw")) return "siw";
  return std::nullopt;
}

std::string NoPciFunctionReason(const TopologyDevice& d) {
  if (SoftwareDriverModule(d)) return d.name + " has no device/: a software RDMA device";
  return d.name + " has no device/ link: not captured, or a driver without one";
}

}  // namespace rdmahd
