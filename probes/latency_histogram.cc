#include "probes/latency_histogram.h"

#include <prometheus/histogram.h>

#include <algorithm>

namespace rdmahd {

const std::vector<double>& PeerLatencyBuckets() {
  static const std::vector<double> kBuckets = {1e-6, 2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 2e-4,
                                               5e-4, 1e-3, 2e-3, 5e-3, 1e-2, 2e-2, 5e-2, 1e-1};
  return kBuckets;
}

// A sample goes to the first bucket whose bound is >= its value in seconds, as in Observe(). One
// ObserveMultiple instead of Observe per sample: Observe takes a mutex and two atomic updates per
// sample, a cost that adds up over every sample of every round (docs/performance.md, "Peer probes:
// what the probe costs around its rounds"). The samples are sorted already, so each bucket's count
// is one binary search.
void ObserveSortedSamples(const std::vector<double>& sorted_us, prometheus::Histogram& histogram) {
  const std::vector<double>& bounds = PeerLatencyBuckets();
  std::vector<double> increments(bounds.size() + 1, 0);
  double sum = 0;
  for (double us : sorted_us) sum += us * 1e-6;
  auto below = sorted_us.begin();
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    auto end = std::upper_bound(below, sorted_us.end(), bounds[i], [](double bound, double us) { return bound < us * 1e-6; });
    increments[i] = static_cast<double>(end - below);
    below = end;
  }
  increments.back() = static_cast<double>(sorted_us.end() - below);
  histogram.ObserveMultiple(increments, sum);
}

}  // namespace rdmahd
