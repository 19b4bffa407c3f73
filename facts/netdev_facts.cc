#include "facts/netdev_facts.h"

namespace rdmahd {

const NetdevFacts* RdmaNetdevFacts::Find(const std::string& netdev) const {
  for (const auto& n : netdevs) {
    if (n.netdev == netdev) return &n;
  }
  return nullptr;
}

}  // namespace rdmahd
