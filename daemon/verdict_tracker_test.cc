#include "daemon/verdict_tracker.h"

#include <gtest/gtest.h>

#include "core/collection_engine.h"

namespace rdmahd {
namespace {

std::shared_ptr<const Report> ReportWith(std::vector<CheckResult> verdicts) {
  auto r = std::make_shared<Report>();
  r->verdicts = std::move(verdicts);
  return r;
}

CheckResult R(std::string subject, Verdict v) { return {"port_active", std::move(subject), v, "", ""}; }

TEST(VerdictTrackerTest, ReportsFirstSightingsThenOnlyChanges) {
  VerdictTracker t;
  auto c1 = t.Observe(ReportWith({R("mlx5_0/1", Verdict::kOk), R("mlx5_1/1", Verdict::kFailed)}));
  ASSERT_EQ(c1.size(), 2u);
  EXPECT_FALSE(c1[0].before.has_value());

  auto c2 = t.Observe(ReportWith({R("mlx5_0/1", Verdict::kOk), R("mlx5_1/1", Verdict::kFailed)}));
  EXPECT_TRUE(c2.empty());

  auto c3 = t.Observe(ReportWith({R("mlx5_0/1", Verdict::kFailed), R("mlx5_1/1", Verdict::kFailed)}));
  ASSERT_EQ(c3.size(), 1u);
  EXPECT_EQ(c3[0].now.subject, "mlx5_0/1");
  EXPECT_EQ(c3[0].before, Verdict::kOk);
}

TEST(VerdictTrackerTest, SameReportTwiceIsObservedOnce) {
  VerdictTracker t;
  auto r = ReportWith({R("a", Verdict::kFailed)});
  EXPECT_EQ(t.Observe(r).size(), 1u);
  EXPECT_TRUE(t.Observe(r).empty());
}

TEST(VerdictTrackerTest, VanishedSubjectIsReportedAgainWhenItReturns) {
  VerdictTracker t;
  (void)t.Observe(ReportWith({R("rxe0/1", Verdict::kOk)}));
  EXPECT_TRUE(t.Observe(ReportWith({})).empty());
  auto back = t.Observe(ReportWith({R("rxe0/1", Verdict::kOk)}));
  ASSERT_EQ(back.size(), 1u);
  EXPECT_FALSE(back[0].before.has_value());
}

}  // namespace
}  // namespace rdmahd
