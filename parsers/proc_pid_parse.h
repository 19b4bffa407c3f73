// Parsers for the per-process files the "workloads" collector reads: /proc/PID/limits,
// /proc/PID/status and /proc/PID/numa_maps. Pure functions over text; errors name what was wrong.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/cpulist.h"
#include "common/result.h"
#include "facts/workload_facts.h"

namespace rdmahd {

// The "Max locked memory" row of /proc/PID/limits:
//   "Max locked memory         65536                65536                bytes"
// Soft and hard are "unlimited" or a decimal number; the unit must be "bytes". A file without the
// row, a truncated row or a number that does not fit 64 bits is an error.
Result<MemlockLimit> ParseMemlockLimit(std::string_view limits_text);

// The fields of /proc/PID/status the workloads collector uses.
struct ProcStatus {
  std::string name;                    // Name (the comm, at most 15 bytes, escaped by the kernel)
  std::optional<CpuList> cpus_allowed; // Cpus_allowed_list
  std::string cpus_note;               // why cpus_allowed is absent (no such line, bad list)
  std::optional<std::uint64_t> cap_effective;  // CapEff (hex bitmask); absent when missing or malformed
  char state = '?';                    // State: R, S, D, Z (zombie), X (dead), ...
};
inline constexpr int kCapIpcLock = 14;  // linux/capability.h CAP_IPC_LOCK
// Errors only when there is no Name line (not a status file, or truncated before it).
Result<ProcStatus> ParseProcStatus(std::string_view text);

// Memory of a process by NUMA node from /proc/PID/numa_maps: for every mapping line the "N<node>=
// <pages>" counts times the mapping's page size ("kernelpagesize_kB=<k>", else
// `default_page_bytes`), summed per node. Mappings with no pages resident have no N fields. A
// malformed N or kernelpagesize_kB token is an error naming the line.
Result<std::map<int, std::uint64_t>> ParseNumaMapsBytesByNode(std::string_view text,
                                                              std::uint64_t default_page_bytes);

}  // namespace rdmahd
