#include "probes/cpu_frequency.h"

#include <map>
#include <string_view>

#include "common/cpu_governor.h"
#include "common/parse.h"

namespace rdmahd {
namespace {

// /proc/cpuinfo of a many-core host is a few hundred KiB; more is not a cpuinfo.
constexpr std::size_t kMaxCpuinfoBytes = 4 << 20;

// "processor : N" -> the "cpu MHz" of its block, for the CPUs in `want`.
std::map<std::uint32_t, double> CpuinfoMhz(const std::string& text, const CpuList& want) {
  std::map<std::uint32_t, double> out;
  std::optional<std::uint32_t> current;
  std::string_view rest = text;
  while (!rest.empty()) {
    const std::size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view key = Trim(line.substr(0, colon));
    const std::string_view value = Trim(line.substr(colon + 1));
    if (key == "processor") {
      auto n = ParseU64(value);
      current = n && *n <= CpuList::kMaxId ? std::optional<std::uint32_t>(static_cast<std::uint32_t>(*n))
                                                : std::nullopt;
    } else if (key == "cpu MHz" && current && want.Contains(*current)) {
      if (auto mhz = ParseDouble(value); mhz && *mhz > 0) out[*current] = *mhz;
    }
  }
  return out;
}

std::string Mhz(double mhz) { return std::to_string(static_cast<long long>(mhz + 0.5)) + " MHz"; }

}  // namespace

std::vector<CpuFrequency> ReadCpuFrequencies(const NodeFs& fs, const CpuList& cpus) {
  std::vector<CpuFrequency> out;
  bool need_cpuinfo = false;
  for (const CpuRange& r : cpus.ranges()) {
    for (std::uint64_t cpu = r.first; cpu <= r.last && out.size() < kMaxFrequencyCpus; ++cpu) {
      CpuFrequency f;
      f.cpu = static_cast<std::uint32_t>(cpu);
      const std::string dir = "devices/system/cpu/cpu" + std::to_string(cpu) + "/cpufreq/";
      if (auto text = fs.ReadFile(fs.Sys(dir + "scaling_cur_freq")); text.ok()) {
        if (auto khz = ParseU64(*text); khz && *khz > 0) f.mhz = static_cast<double>(*khz) / 1000.0;
      }
      if (auto governor = ReadScalingGovernor(fs, f.cpu)) f.governor = std::move(*governor);
      need_cpuinfo = need_cpuinfo || !f.mhz;
      out.push_back(std::move(f));
    }
  }
  if (need_cpuinfo) {
    if (auto text = fs.ReadFile(fs.Proc("cpuinfo"), kMaxCpuinfoBytes); text.ok()) {
      const auto mhz = CpuinfoMhz(*text, cpus);
      for (CpuFrequency& f : out) {
        if (auto it = mhz.find(f.cpu); !f.mhz && it != mhz.end()) f.mhz = it->second;
      }
    }
  }
  return out;
}

std::string CpuFrequencyWarning(const std::vector<CpuFrequency>& cpus) {
  const CpuFrequency* low = nullptr;
  const CpuFrequency* high = nullptr;
  std::map<std::string, std::vector<CpuRange>> slow_governors;  // governor -> its CPUs
  for (const CpuFrequency& f : cpus) {
    if (f.mhz) {
      if (!low || *f.mhz < *low->mhz) low = &f;
      if (!high || *f.mhz > *high->mhz) high = &f;
    }
    if (!f.governor.empty() && f.governor != "performance") slow_governors[f.governor].push_back({f.cpu, f.cpu});
  }
  std::vector<std::string> parts;
  if (low && high && *high->mhz - *low->mhz > kConflictingFrequencyShare * *high->mhz) {
    parts.push_back("conflicting CPU frequencies on the probe's CPUs: " + Mhz(*low->mhz) + " (cpu " +
                    std::to_string(low->cpu) + ") != " + Mhz(*high->mhz) + " (cpu " + std::to_string(high->cpu) +
                    ")");
  }
  for (const auto& [governor, ranges] : slow_governors) {
    parts.push_back("CPU frequency governor " + governor + " on cpus " + CpuList(ranges).ToString());
  }
  if (parts.empty()) return "";
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out + ": latency samples are stretched and spread; set the performance governor "
               "(`cpupower frequency-set -g performance`) as perftest expects";
}

}  // namespace rdmahd
