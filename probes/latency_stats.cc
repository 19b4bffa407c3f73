#include "probes/latency_stats.h"

#include <algorithm>
#include <cmath>

namespace rdmahd {
namespace {

// The largest samples perftest sets aside before its statistics (its LAT_MEASURE_TAIL).
constexpr std::size_t kTail = 2;

// sorted[ceil(m * fraction)], in perftest's double arithmetic. ceil(m * f) <= m for f < 1, and
// sorted has m + kTail entries, so the index is always inside.
double Percentile(const std::vector<double>& sorted, std::size_t m, double fraction) {
  const auto index = static_cast<std::size_t>(std::ceil(static_cast<double>(m) * fraction));
  return sorted[std::min(index, sorted.size() - 1)];
}

}  // namespace

std::optional<LatencyStats> ComputeLatencyStats(std::vector<double> samples) {
  return ComputeLatencyStatsInPlace(samples);
}

std::optional<LatencyStats> ComputeLatencyStatsInPlace(std::vector<double>& samples) {
  std::sort(samples.begin(), samples.end());
  if (samples.size() <= kTail) return std::nullopt;
  LatencyStats s;
  s.samples = samples.size();
  const std::size_t m = samples.size() - kTail;
  s.measured = m;
  s.min_us = samples.front();
  s.max_us = samples[m];
  s.typical_us = m % 2 == 0 ? (samples[m / 2 - 1] + samples[m / 2]) / 2 : samples[m / 2];
  double sum = 0;
  for (std::size_t i = 0; i < m; ++i) sum += samples[i];
  s.average_us = sum / static_cast<double>(m);
  double squares = 0;
  for (std::size_t i = 0; i < m; ++i) squares += (samples[i] - s.average_us) * (samples[i] - s.average_us);
  s.stdev_us = std::sqrt(squares / static_cast<double>(m));
  s.p99_us = Percentile(samples, m, 0.99);
  s.p99_9_us = Percentile(samples, m, 0.999);
  return s;
}

}  // namespace rdmahd
