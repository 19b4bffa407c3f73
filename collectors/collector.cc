#include "collectors/collector.h"

#include <algorithm>

namespace rdmahd {
namespace {
// Function-local static: safe against static-initialisation order across translation units.
std::vector<CollectorRegistration>& Registry() {
  static std::vector<CollectorRegistration> registry;
  return registry;
}
}  // namespace

namespace internal {
bool RegisterCollector(std::string name, CollectorFactory factory) {
  auto& r = Registry();
  r.push_back({std::move(name), std::move(factory)});
  std::sort(r.begin(), r.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return true;
}
}  // namespace internal

const std::vector<CollectorRegistration>& RegisteredCollectors() { return Registry(); }

std::vector<std::string> RegisteredCollectorNames() {
  std::vector<std::string> names;
  for (const auto& r : Registry()) names.push_back(r.name);
  return names;
}

}  // namespace rdmahd
