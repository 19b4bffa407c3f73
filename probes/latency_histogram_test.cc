#include "probes/latency_histogram.h"

#include <prometheus/histogram.h>
#include <gtest/gtest.h>
#include <algorithm>
#include <random>
#include <vector>


namespace rdmahd {
namespace {

// The one-update bucketing counts exactly as prometheus-cpp's per-sample Observe, bounds included.
TEST(LatencyHistogramTest, SortedSamplesFillTheHistogramAsObserveDoes) {
  std::vector<double> us = {0.5, 1.0, 1.0000001, 2.0, 3.7, 5.0, 9.99, 10.0, 150.0, 100000.0, 250000.0};
  std::mt19937 random(3);
  std::uniform_real_distribution<double> wide(0.1, 2000.0);
  for (int i = 0; i < 2000; ++i) us.push_back(wide(random));
  std::sort(us.begin(), us.end());
  prometheus::Histogram one_by_one(PeerLatencyBuckets());
  for (double v : us) one_by_one.Observe(v * 1e-6);
  prometheus::Histogram at_once(PeerLatencyBuckets());
  ObserveSortedSamples(us, at_once);
  const auto a = one_by_one.Collect().histogram;
  const auto b = at_once.Collect().histogram;
  ASSERT_EQ(a.bucket.size(), b.bucket.size());
  for (std::size_t i = 0; i < a.bucket.size(); ++i) {
    EXPECT_EQ(a.bucket[i].cumulative_count, b.bucket[i].cumulative_count) << "le " << a.bucket[i].upper_bound;
  }
  EXPECT_EQ(a.sample_count, b.sample_count);
  EXPECT_NEAR(a.sample_sum, b.sample_sum, 1e-12);
}

}  // namespace
}  // namespace rdmahd
