#include "core/topology.h"

#include <algorithm>

namespace rdmahd {

std::vector<std::string> Topology::Netdevs() const {
  std::vector<std::string> out;
  out.reserve(links.size());
  for (const RdmaNetdev& l : links) out.push_back(l.netdev);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Registry<TopologySource>& TopologySourceRegistry() {
  static Registry<TopologySource> registry;
  return registry;
}

}  // namespace rdmahd
