// CPU frequency of the CPUs a probe thread may run on. A latency sample is a few microseconds of
// busy polling: a core clocked down by its governor (powersave, ondemand, schedutil) or running at
// another frequency than its neighbours stretches samples and spreads them. perftest warns about
// this ("Conflicting CPU frequency values detected") and so does the probe: in `rdma-healthd
// probe`'s output and in the peer_latency reason.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/cpulist.h"
#include "common/node_fs.h"

namespace rdmahd {

struct CpuFrequency {
  std::uint32_t cpu = 0;
  std::optional<double> mhz;  // cpufreq's scaling_cur_freq, else /proc/cpuinfo's "cpu MHz"
  std::string governor;       // cpufreq's scaling_governor; empty without cpufreq (a VM, a container)
};

// At most this many CPUs are read (the lowest of `cpus`): a round reads them on the probe thread.
inline constexpr std::size_t kMaxFrequencyCpus = 64;

// Reads /sys/devices/system/cpu/cpuN/cpufreq/{scaling_cur_freq,scaling_governor} for each CPU of
// `cpus` and, for CPUs without cpufreq, the "cpu MHz" of its "processor : N" block of
// /proc/cpuinfo. A CPU whose files are missing or garbled is kept with what could be read.
std::vector<CpuFrequency> ReadCpuFrequencies(const NodeFs& fs, const CpuList& cpus);

// Frequencies that differ by more than this share of the highest are "conflicting".
inline constexpr double kConflictingFrequencyShare = 0.05;

// "" when the CPUs agree and none has a governor other than performance; otherwise one sentence
// naming the lowest and highest frequency and their CPUs, and the governors, with the fix.
std::string CpuFrequencyWarning(const std::vector<CpuFrequency>& cpus);

}  // namespace rdmahd
