#include "config/config_section.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <tuple>

namespace rdmahd {
namespace {

std::vector<ConfigSectionEntry>& Registered() {
  static std::vector<ConfigSectionEntry> entries;
  return entries;
}

std::string ParentOf(const std::string& path) {
  const std::size_t dot = path.rfind('.');
  return dot == std::string::npos ? "" : path.substr(0, dot);
}

}  // namespace

namespace internal {
bool AddConfigSection(ConfigSectionEntry entry) {
  const bool bad_path = entry.path.empty() || entry.path.front() == '.' || entry.path.back() == '.';
  const bool twice = std::any_of(Registered().begin(), Registered().end(),
                                 [&](const ConfigSectionEntry& e) { return e.path == entry.path; });
  if (bad_path || twice) {
    std::fprintf(stderr, "rdma-healthd: config section \"%s\" %s\n", entry.path.c_str(),
                 bad_path ? "has no valid path" : "registered twice");
    std::abort();
  }
  Registered().push_back(std::move(entry));
  return true;
}
}  // namespace internal

const std::vector<ConfigSectionEntry>& ConfigSections() {
  // Sorted once, after static initialisation registered them all.
  static const std::vector<ConfigSectionEntry> sorted = [] {
    std::vector<ConfigSectionEntry> out = Registered();
    std::stable_sort(out.begin(), out.end(), [](const ConfigSectionEntry& a, const ConfigSectionEntry& b) {
      return std::tuple(ParentOf(a.path), a.order, a.path) < std::tuple(ParentOf(b.path), b.order, b.path);
    });
    return out;
  }();
  return sorted;
}

// "host" holds the host-readiness sections of several plug-ins (host memory checks, workloads,
// plumbing, link flaps, cpu_governor).
RDMAHD_REGISTER_CONFIG_GROUP(host, "host", 50, {});

}  // namespace rdmahd
