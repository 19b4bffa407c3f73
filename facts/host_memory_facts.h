// Host memory facts: hugepage pools per page size (system-wide and per NUMA node), transparent
// hugepages and automatic NUMA balancing. Stored by the "hugepages" collector; data only.
// Absent is not zero: every count is optional, and a note says why it is missing.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace rdmahd {

// One hugepage pool, in pages of its size. The kernel reports reserved pages system-wide only.
struct HugepagePool {
  std::optional<std::uint64_t> total;     // nr_hugepages
  std::optional<std::uint64_t> free;      // free_hugepages
  std::optional<std::uint64_t> reserved;  // resv_hugepages (system-wide only)
  std::optional<std::uint64_t> surplus;   // surplus_hugepages
};

struct HugepageSizeFacts {
  std::uint64_t size_bytes = 0;
  HugepagePool system;                 // /sys/kernel/mm/hugepages/hugepages-<kB>kB/
  std::map<int, HugepagePool> nodes;   // /sys/devices/system/node/nodeN/hugepages/hugepages-<kB>kB/
  std::vector<std::string> notes;      // files that could not be read, and why
};

struct HostMemoryFacts {
  // Sorted by size_bytes. Empty with hugepages_note set when the kernel has no hugetlb support or
  // the folder could not be read.
  std::vector<HugepageSizeFacts> hugepage_sizes;
  std::string hugepages_note;

  // /proc/meminfo: the default size (Hugepagesize) and the memory of every hugetlb pool (Hugetlb,
  // kernel >= 4.16; it counts the non-default sizes HugePages_* leave out).
  std::optional<std::uint64_t> default_hugepage_size_bytes;
  std::optional<std::uint64_t> hugetlb_bytes;
  std::string meminfo_note;

  // /sys/kernel/mm/transparent_hugepage/enabled: the selected mode ("always", "madvise", "never").
  std::optional<std::string> thp_mode;
  std::string thp_note;

  // /proc/sys/kernel/numa_balancing: true when automatic NUMA balancing migrates pages (any
  // non-zero mode; 2 = memory tiering).
  std::optional<bool> numa_balancing;
  std::optional<std::uint64_t> numa_balancing_mode;
  std::string numa_balancing_note;

  const HugepageSizeFacts* FindSize(std::uint64_t size_bytes) const {
    for (const auto& s : hugepage_sizes) {
      if (s.size_bytes == size_bytes) return &s;
    }
    return nullptr;
  }
};

}  // namespace rdmahd
