// The cpufreq governor of one CPU (/sys/devices/system/cpu/cpuN/cpufreq/scaling_governor), one
// reader for the "plumbing" collector (the governors of NIC-local CPUs, rdma_cpu_governor_cpus)
// and the peer probes' CPU frequency warning (probes/cpu_frequency.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/held_files.h"
#include "common/node_fs.h"

namespace rdmahd {

// CPU `cpu`'s governor: the file's text without surrounding white space, when that is a kernel
// identifier (1 to 32 of a-z, 0-9, '_' and '-'). nullopt when the CPU has no cpufreq (a VM, a
// container), the file cannot be read, or it is empty or garbled: a name from the file never
// reaches a metric label or a reason unchecked. Through `held` when given (the file stays open for
// the next read: a collector reads it on every scrape), else one open, read and close.
std::optional<std::string> ReadScalingGovernor(const NodeFs& fs, std::uint32_t cpu, HeldFiles* held = nullptr);

}  // namespace rdmahd
