#include "common/duration_text.h"

#include <gtest/gtest.h>

namespace rdmahd {
namespace {

using std::chrono::milliseconds;

TEST(DurationTextTest, FormatDurationSpellsAsTheConfigDoes) {
  EXPECT_EQ(FormatDuration(milliseconds(5000)), "5s");
  EXPECT_EQ(FormatDuration(milliseconds(60000)), "60s");
  EXPECT_EQ(FormatDuration(milliseconds(1500)), "1500ms");
  EXPECT_EQ(FormatDuration(milliseconds(250)), "250ms");
  EXPECT_EQ(FormatDuration(milliseconds(0)), "0ms");
  EXPECT_EQ(FormatDuration(milliseconds(-5000)), "-5000ms");
  EXPECT_EQ(FormatDuration(milliseconds(86'400'000)), "86400s");
}

TEST(DurationTextTest, FormatSecondsRoundsToWholeSecondsAndBelowTenToTenths) {
  EXPECT_EQ(FormatSeconds(0), "0 s");
  EXPECT_EQ(FormatSeconds(0.04), "0 s");
  EXPECT_EQ(FormatSeconds(0.22), "0.2 s");  // a span the daemon observed: never "0 s"
  EXPECT_EQ(FormatSeconds(2.0), "2 s");
  EXPECT_EQ(FormatSeconds(2.46), "2.5 s");
  EXPECT_EQ(FormatSeconds(9.94), "9.9 s");
  EXPECT_EQ(FormatSeconds(9.96), "10 s");
  EXPECT_EQ(FormatSeconds(15.3), "15 s");
  EXPECT_EQ(FormatSeconds(59.4), "59 s");
  EXPECT_EQ(FormatSeconds(59.5), "60 s");
  EXPECT_EQ(FormatSeconds(3599.98), "3600 s");
  EXPECT_EQ(FormatSeconds(86400), "86400 s");
}

TEST(DurationTextTest, FormatCoarseDurationPicksTheUnit) {
  EXPECT_EQ(FormatCoarseDuration(-3), "0 s");  // a clock step: never a negative age
  EXPECT_EQ(FormatCoarseDuration(0), "0 s");
  EXPECT_EQ(FormatCoarseDuration(119), "119 s");
  EXPECT_EQ(FormatCoarseDuration(120), "2 min");
  EXPECT_EQ(FormatCoarseDuration(7199), "119 min");
  EXPECT_EQ(FormatCoarseDuration(7200), "2 h");
  EXPECT_EQ(FormatCoarseDuration(86399), "23 h");
}

TEST(DurationTextTest, FormatUptimeNamesEveryUnitFromTheLargest) {
  EXPECT_EQ(FormatUptime(0), "0s");
  EXPECT_EQ(FormatUptime(59.9), "59s");
  EXPECT_EQ(FormatUptime(60), "1m 0s");
  EXPECT_EQ(FormatUptime(3600), "1h 0m 0s");
  EXPECT_EQ(FormatUptime(2 * 86400 + 3 * 3600 + 4 * 60 + 5), "2d 3h 4m 5s");
  EXPECT_EQ(FormatUptime(86400 + 5), "1d 0h 0m 5s");
}

}  // namespace
}  // namespace rdmahd
