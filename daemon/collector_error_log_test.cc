#include "daemon/collector_error_log.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace rdmahd {
namespace {

std::vector<CollectorOutcome> Outcomes(std::vector<std::string> devices_errors, std::vector<std::string> roce_errors = {}) {
  CollectorOutcome devices{"devices", true, {}, std::move(devices_errors)};
  CollectorOutcome roce{"roce", true, {}, std::move(roce_errors)};
  return {devices, roce};
}

using Pairs = std::vector<std::pair<std::string, std::string>>;

const std::string kDenied = "open /sys/class/infiniband/mlx5_0/ports: Permission denied";
const std::string kFwVer = "open /sys/class/infiniband/mlx5_0/fw_ver: Permission denied";

TEST(CollectorErrorLogTest, AFileFailingOnEveryCollectionIsNewOnceUntilItReadsAgain) {
  CollectorErrorLog log;
  EXPECT_EQ(log.Observe(Outcomes({kDenied})).errors, (Pairs{{"devices", kDenied}}));
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(log.Observe(Outcomes({kDenied})).errors.empty()) << i;
  // Another file starts failing: only it is new.
  EXPECT_EQ(log.Observe(Outcomes({kDenied, kFwVer})).errors, (Pairs{{"devices", kFwVer}}));
  // Both read again, then the first fails again: new again.
  EXPECT_TRUE(log.Observe(Outcomes({})).errors.empty());
  EXPECT_EQ(log.Observe(Outcomes({kDenied})).errors, (Pairs{{"devices", kDenied}}));
}

TEST(CollectorErrorLogTest, TheSameMessageFromAnotherCollectorIsAnotherError) {
  CollectorErrorLog log;
  EXPECT_EQ(log.Observe(Outcomes({kDenied}, {kDenied})).errors, (Pairs{{"devices", kDenied}, {"roce", kDenied}}));
  EXPECT_TRUE(log.Observe(Outcomes({kDenied}, {kDenied})).errors.empty());
  // A message repeated within one collection is one error.
  CollectorErrorLog fresh;
  EXPECT_EQ(fresh.Observe(Outcomes({kDenied, kDenied})).errors.size(), 1u);
}

TEST(CollectorErrorLogTest, ManyNewErrorsAreCappedAndTheRestCounted) {
  CollectorErrorLog log;
  std::vector<std::string> many;
  for (int i = 0; i < 1000; ++i) many.push_back("open counters/c" + std::to_string(i) + ": Permission denied");
  CollectorErrorLog::NewErrors first = log.Observe(Outcomes(many));
  EXPECT_EQ(first.errors.size(), CollectorErrorLog::kMaxNewPerCollection);
  EXPECT_EQ(first.suppressed, 1000 - CollectorErrorLog::kMaxNewPerCollection);
  CollectorErrorLog::NewErrors second = log.Observe(Outcomes(many));
  EXPECT_TRUE(second.errors.empty());
  EXPECT_EQ(second.suppressed, 0u);
}

}  // namespace
}  // namespace rdmahd
