// CpuList: a set of CPU (or NUMA node) numbers in the kernel's list format, "0-63,128-191", as
// /sys/devices/system/node/nodeN/cpulist, a device's local_cpulist and /proc/PID/status
// Cpus_allowed_list print it. An empty line is a valid, empty list (a memory-only NUMA node).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace rdmahd {

struct CpuRange {
  std::uint32_t first = 0;
  std::uint32_t last = 0;  // inclusive
  bool operator==(const CpuRange&) const = default;
};

class CpuList {
 public:
  // Larger numbers are refused: the kernel's NR_CPUS tops out at 8192 and MAX_NUMNODES at 1024, so
  // a bigger one is corruption, and a bound keeps hostile text from building huge sets.
  static constexpr std::uint32_t kMaxId = 65535;

  CpuList() = default;
  // Normalizes: sorted, overlapping and adjacent ranges merged.
  explicit CpuList(std::vector<CpuRange> ranges);

  const std::vector<CpuRange>& ranges() const { return ranges_; }
  bool empty() const { return ranges_.empty(); }
  std::uint64_t count() const;
  bool Contains(std::uint32_t id) const;
  // Members of this list that are also in `other`.
  std::uint64_t CountIn(const CpuList& other) const;
  CpuList Union(const CpuList& other) const;
  // The kernel's format again ("0-3,8"; "" when empty).
  std::string ToString() const;

  bool operator==(const CpuList&) const = default;

 private:
  std::vector<CpuRange> ranges_;
};

// Parses the list format after trimming whitespace (the newline sysfs adds). Errors say what was
// wrong and where ("cpulist \"0-x\": bad number at \"x\""): reversed ranges, ids above kMaxId,
// stray characters, the "0-7:2/4" stride form (the kernel accepts it when written but never prints
// it, so in a file it means something else wrote the file).
Result<CpuList> ParseCpuList(std::string_view text);

}  // namespace rdmahd
