// Parsers for the host memory files the "hugepages" collector reads: /proc/meminfo, the hugepage
// pool folders of /sys/kernel/mm/hugepages and /sys/devices/system/node/nodeN/hugepages, per-node
// meminfo, transparent hugepages and NUMA balancing. Pure functions over text; errors name the
// offending line or value.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string_view>

#include "common/result.h"
#include "facts/host_memory_facts.h"

namespace rdmahd {

// The hugepage lines of /proc/meminfo. HugePages_* count pages of the default size only.
struct MeminfoHugepages {
  std::optional<std::uint64_t> total, free, reserved, surplus;  // pages of the default size
  std::optional<std::uint64_t> page_size_bytes;                 // Hugepagesize
  std::optional<std::uint64_t> hugetlb_bytes;                   // Hugetlb (kernel >= 4.16)
};

// A kernel without hugetlb has none of these lines: all fields absent, not an error. A hugepage
// line whose value is not a number (with "kB" where the kernel prints it) is an error; so is text
// with no "Key: value" line at all (not a meminfo file).
Result<MeminfoHugepages> ParseMeminfoHugepages(std::string_view text);

// Per-node meminfo (/sys/devices/system/node/nodeN/meminfo, lines "Node 1 HugePages_Total:   512"),
// one or several nodes' files concatenated: node -> pool of the default size (no reserved count).
Result<std::map<int, HugepagePool>> ParseNodeMeminfoHugepages(std::string_view text);

// "hugepages-2048kB" -> 2097152 bytes; nullopt for any other name.
std::optional<std::uint64_t> ParseHugepageDirName(std::string_view name);

// One of nr_hugepages, free_hugepages, resv_hugepages, surplus_hugepages: a page count.
Result<std::uint64_t> ParseHugepageCount(std::string_view text);

// /sys/kernel/mm/transparent_hugepage/enabled, "always [madvise] never": the bracketed mode.
Result<std::string> ParseThpMode(std::string_view text);

// /proc/sys/kernel/numa_balancing: 0 off, 1 normal, 2 memory tiering (3 = both, newer kernels).
Result<std::uint64_t> ParseNumaBalancing(std::string_view text);

}  // namespace rdmahd
