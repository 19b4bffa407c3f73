#include "collectors/netdev_reads.h"

#include <algorithm>

namespace rdmahd {

std::string Priority(int p) { return std::to_string(p); }

bool IsListed(const std::vector<std::string>& netdevs, const std::string& name) {
  return std::binary_search(netdevs.begin(), netdevs.end(), name);
}

std::optional<HeldFile> HeldIfExists(const NodeFs& fs, const std::shared_ptr<const HeldFile::Folder>& folder,
                                     std::uint32_t i, FsWork& work) {
  ++work.probes;
  HeldFile file(folder, i);
  if (!fs.Exists(file.path())) return std::nullopt;
  return file;
}

const std::shared_ptr<const NameList>& CaptureFileNames() {
  static const auto names =
      std::make_shared<const NameList>(NameList{"ethtool-S.txt", "ethtool-a.txt", "pfc.json", "app.json"});
  return names;
}

std::string LayoutRoot(const NodeFs& fs) { return fs.sysfs_root() + '\n' + fs.dcb_dir(); }

std::string NotCaptured(std::string_view what_comes, std::string_view capture) {
  return "not captured: " + std::string(what_comes) + " from the node's kernel and --path.sysfs is not /sys (capture `" +
         std::string(capture) + "`, then pass --path.dcb=DIR)";
}

}  // namespace rdmahd
