#include "daemon/verdict_tracker.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/collection_engine.h"

namespace rdmahd {
namespace {

std::shared_ptr<const Report> ReportWith(std::vector<CheckResult> verdicts) {
  auto r = std::make_shared<Report>();
  r->verdicts = VerdictList(verdicts);
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

// "subject:before>now" for each change, "subject:new>now" for a first sighting.
std::vector<std::string> Changes(const std::vector<VerdictChange>& changes) {
  std::vector<std::string> out;
  for (const VerdictChange& c : changes) {
    out.push_back(c.now.subject + ":" + (c.before ? std::string(VerdictName(*c.before)) : "new") + ">" +
                  std::string(VerdictName(c.now.verdict)));
  }
  return out;
}

using Strings = std::vector<std::string>;

TEST(VerdictTrackerTest, ReorderedSubjectsAreMatchedByName) {
  // Matching by position is a shortcut: a report in another order must compare subject by subject.
  VerdictTracker t;
  (void)t.Observe(ReportWith({R("a", Verdict::kOk), R("b", Verdict::kFailed), R("c", Verdict::kOk)}));
  EXPECT_EQ(Changes(t.Observe(ReportWith({R("c", Verdict::kOk), R("b", Verdict::kFailed), R("a", Verdict::kOk)}))),
            Strings{});
  EXPECT_EQ(Changes(t.Observe(ReportWith({R("c", Verdict::kOk), R("b", Verdict::kOk), R("a", Verdict::kFailed)}))),
            (Strings{"b:failed>ok", "a:ok>failed"}));
  // Same check name, other subject; same subject, other check name.
  CheckResult other_check = R("a", Verdict::kFailed);
  other_check.check = "port_rate";
  EXPECT_EQ(Changes(t.Observe(ReportWith({R("c", Verdict::kOk), R("b", Verdict::kOk), other_check}))),
            (Strings{"a:new>failed"}));
}

TEST(VerdictTrackerTest, SubjectsAddedAndRemovedBetweenReportsShowInTheNext) {
  VerdictTracker t;
  (void)t.Observe(ReportWith({R("a", Verdict::kOk), R("b", Verdict::kOk)}));
  // Added in the middle: only it is new; the subjects after it are still known.
  EXPECT_EQ(Changes(t.Observe(ReportWith({R("a", Verdict::kOk), R("x", Verdict::kFailed), R("b", Verdict::kOk)}))),
            (Strings{"x:new>failed"}));
  // Removed again, and the tail changed: the change is seen although the positions moved.
  EXPECT_EQ(Changes(t.Observe(ReportWith({R("a", Verdict::kOk), R("b", Verdict::kFailed)}))),
            (Strings{"b:ok>failed"}));
  // x was forgotten when it vanished: its return is a first sighting again.
  EXPECT_EQ(Changes(t.Observe(ReportWith({R("a", Verdict::kOk), R("x", Verdict::kFailed), R("b", Verdict::kFailed)}))),
            (Strings{"x:new>failed"}));
  // Same length, last subject replaced; then the old one back.
  EXPECT_EQ(Changes(t.Observe(ReportWith({R("a", Verdict::kOk), R("x", Verdict::kFailed), R("y", Verdict::kOk)}))),
            (Strings{"y:new>ok"}));
  EXPECT_EQ(Changes(t.Observe(ReportWith({R("a", Verdict::kOk), R("x", Verdict::kFailed), R("b", Verdict::kOk)}))),
            (Strings{"b:new>ok"}));
  // Steady state after all that: nothing.
  EXPECT_EQ(Changes(t.Observe(ReportWith({R("a", Verdict::kOk), R("x", Verdict::kFailed), R("b", Verdict::kOk)}))),
            Strings{});
  // Shorter and longer by one at the end.
  EXPECT_EQ(Changes(t.Observe(ReportWith({R("a", Verdict::kFailed), R("x", Verdict::kFailed)}))),
            (Strings{"a:ok>failed"}));
  EXPECT_EQ(Changes(t.Observe(ReportWith({R("a", Verdict::kFailed), R("x", Verdict::kFailed), R("b", Verdict::kOk)}))),
            (Strings{"b:new>ok"}));
}

// The tracker compares with the last report itself and keeps no copy of its verdicts: the report
// before it is let go as soon as nobody else holds it.
TEST(VerdictTrackerTest, OnlyTheLastReportIsKept) {
  VerdictTracker t;
  auto first = ReportWith({R("a", Verdict::kOk)});
  std::weak_ptr<const Report> watch = first;
  (void)t.Observe(first);
  first.reset();
  EXPECT_FALSE(watch.expired());
  EXPECT_EQ(Changes(t.Observe(ReportWith({R("a", Verdict::kFailed)}))), (Strings{"a:ok>failed"}));
  EXPECT_TRUE(watch.expired());
}

}  // namespace
}  // namespace rdmahd
