// Expected values are computed independently in Python (the snippet beside each vector), not with
// the code under test.
#include "probes/latency_stats.h"

#include <gtest/gtest.h>

#include <vector>

namespace rdmahd {
namespace {

TEST(LatencyStatsTest, TenUnsortedSamplesDropTheLargestTwoAndReportTheSecondLargestAsMax) {
  // s = sorted([5,3,9,1,7,2,8,4,6,100]); m = 8
  // min s[0]=1, max s[m]=9, median (s[3]+s[4])/2=4.5, avg sum(s[:8])/8=4.5,
  // stdev sqrt(sum((x-4.5)**2 for x in s[:8])/8) = 2.29128784747792,
  // p99 s[ceil(8*0.99)=8]=9, p99.9 s[ceil(8*0.999)=8]=9
  auto s = ComputeLatencyStats({5, 3, 9, 1, 7, 2, 8, 4, 6, 100});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->samples, 10u);
  EXPECT_EQ(s->measured, 8u);
  EXPECT_DOUBLE_EQ(s->min_us, 1);
  EXPECT_DOUBLE_EQ(s->max_us, 9);  // not 100 (set aside), not 8 (the trimmed set's max)
  EXPECT_DOUBLE_EQ(s->typical_us, 4.5);
  EXPECT_DOUBLE_EQ(s->average_us, 4.5);
  EXPECT_NEAR(s->stdev_us, 2.29128784747792, 1e-12);
  EXPECT_DOUBLE_EQ(s->p99_us, 9);
  EXPECT_DOUBLE_EQ(s->p99_9_us, 9);
}

TEST(LatencyStatsTest, DefaultThousandIterationsVector) {
  // xs = [2.0 + ((i*7919) % 1000)/1000.0 for i in range(997)] + [250.0, 40.0]
  // s = sorted(xs); m = 997 (odd: median s[498])
  // -> min 2.0, max s[997]=40.0, median 2.501, avg 2.5005155466399196,
  //    stdev (over s[:997], dividing by 997) 0.2884910088644253,
  //    p99 s[ceil(997*0.99)=988]=2.991, p99.9 s[ceil(997*0.999)=997]=40.0
  std::vector<double> xs;
  for (int i = 0; i < 997; ++i) xs.push_back(2.0 + ((i * 7919) % 1000) / 1000.0);
  xs.push_back(250.0);
  xs.push_back(40.0);
  auto s = ComputeLatencyStats(xs);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->samples, 999u);
  EXPECT_EQ(s->measured, 997u);
  EXPECT_DOUBLE_EQ(s->min_us, 2.0);
  EXPECT_DOUBLE_EQ(s->max_us, 40.0);
  EXPECT_DOUBLE_EQ(s->typical_us, 2.501);
  EXPECT_NEAR(s->average_us, 2.5005155466399196, 1e-12);
  EXPECT_NEAR(s->stdev_us, 0.2884910088644253, 1e-12);
  EXPECT_DOUBLE_EQ(s->p99_us, 2.991);
  EXPECT_DOUBLE_EQ(s->p99_9_us, 40.0);
}

TEST(LatencyStatsTest, HundredMeasuredSamplesUseIndex99And100AndAnEvenMedian) {
  // ys = [0.5*k for k in range(102)] reversed; m = 100
  // p99 index ceil(100*0.99) = 99 -> 49.5 (99.0 exactly in double, no round-up to 100);
  // p99.9 index ceil(99.9) = 100 -> 50.0; median (s[49]+s[50])/2 = 24.75; avg 24.75; max s[100]=50
  std::vector<double> ys;
  for (int k = 101; k >= 0; --k) ys.push_back(0.5 * k);
  auto s = ComputeLatencyStats(ys);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->measured, 100u);
  EXPECT_DOUBLE_EQ(s->p99_us, 49.5);
  EXPECT_DOUBLE_EQ(s->p99_9_us, 50.0);
  EXPECT_DOUBLE_EQ(s->typical_us, 24.75);
  EXPECT_DOUBLE_EQ(s->average_us, 24.75);
  EXPECT_DOUBLE_EQ(s->max_us, 50.0);
  EXPECT_DOUBLE_EQ(s->min_us, 0.0);
}

TEST(LatencyStatsTest, ThreeSamplesLeaveOneMeasured) {
  // sorted [1,2,3]; m = 1: median = avg = min = s[0] = 1; max s[1] = 2; p99 s[ceil(0.99)=1] = 2
  auto s = ComputeLatencyStats({3, 1, 2});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->measured, 1u);
  EXPECT_DOUBLE_EQ(s->min_us, 1);
  EXPECT_DOUBLE_EQ(s->typical_us, 1);
  EXPECT_DOUBLE_EQ(s->average_us, 1);
  EXPECT_DOUBLE_EQ(s->max_us, 2);
  EXPECT_DOUBLE_EQ(s->p99_us, 2);
  EXPECT_DOUBLE_EQ(s->p99_9_us, 2);
}

TEST(LatencyStatsTest, FourSamplesGiveAnEvenMedianOfTwo) {
  // sorted [1,2,10,20]; m = 2: median (1+2)/2 = 1.5; avg 1.5; max s[2] = 10; p99 s[ceil(1.98)=2] = 10
  auto s = ComputeLatencyStats({20, 2, 10, 1});
  ASSERT_TRUE(s);
  EXPECT_DOUBLE_EQ(s->typical_us, 1.5);
  EXPECT_DOUBLE_EQ(s->average_us, 1.5);
  EXPECT_DOUBLE_EQ(s->max_us, 10);
  EXPECT_DOUBLE_EQ(s->p99_us, 10);
}

TEST(LatencyStatsTest, FewerThanThreeSamplesHaveNoStatistics) {
  EXPECT_FALSE(ComputeLatencyStats({}));
  EXPECT_FALSE(ComputeLatencyStats({1.0}));
  EXPECT_FALSE(ComputeLatencyStats({1.0, 2.0}));
}

TEST(LatencyStatsTest, AllEqualSamplesGiveThatValueEverywhere) {
  auto s = ComputeLatencyStats(std::vector<double>(50, 4.25));
  ASSERT_TRUE(s);
  for (double v : {s->min_us, s->max_us, s->typical_us, s->average_us, s->p99_us, s->p99_9_us}) {
    EXPECT_DOUBLE_EQ(v, 4.25);
  }
  EXPECT_DOUBLE_EQ(s->stdev_us, 0);
}

}  // namespace
}  // namespace rdmahd
