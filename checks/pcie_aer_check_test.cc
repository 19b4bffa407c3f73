// pcie_aer over the history: collection after collection of aer_dev_* counts, as the engine runs it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

#include "core/check.h"
#include "core/history.h"
#include "facts/pcie_aer_facts.h"

namespace rdmahd {
namespace {

using ::testing::HasSubstr;
using std::chrono::minutes;
using std::chrono::seconds;

const History::TimePoint kT0 = History::TimePoint{} + std::chrono::hours(100);

AerCounts Counts(AerSeverity s, std::vector<std::pair<std::string, std::uint64_t>> bits) {
  AerCounts c;
  c.severity = s;
  std::uint64_t total = 0;
  for (auto& [name, n] : bits) {
    c.counters.push_back({name, name, n});
    total += n;
  }
  c.total = total;
  return c;
}

struct Timeline {
  Config config;
  History history;
  std::unique_ptr<Check> check = CheckRegistry().Find("pcie_aer")->factory();

  // One collection at `t` of mlx5_0's three files with these counts.
  CheckResult At(seconds t, std::uint64_t rx_err, std::uint64_t cmplt_to, std::uint64_t fatal_dlp,
                 const std::string& pci = "0000:3b:00.0") {
    PcieAerFacts facts;
    PcieAerDeviceFacts& d = facts.devices.emplace_back();
    d.device = "mlx5_0";
    d.pci_address = pci;
    d.counts[0] = Counts(AerSeverity::kCorrectable, {{"RxErr", rx_err}, {"BadTLP", 0}});
    d.counts[1] = Counts(AerSeverity::kNonFatal, {{"CmpltTO", cmplt_to}});
    d.counts[2] = Counts(AerSeverity::kFatal, {{"DLP", fatal_dlp}});
    Snapshot s;
    s.Put(std::move(facts));
    std::vector<CheckResult> out;
    RunCheck("pcie_aer", *check, s, config, history, kT0 + t, out);
    EXPECT_EQ(out.size(), 1u);
    return out.empty() ? CheckResult{} : out[0];
  }
};

TEST(PcieAerCheckTest, OneCollectionJudgesCountsSinceEnumeration) {
  Timeline clean;
  CheckResult r = clean.At(seconds(0), 0, 0, 0);
  EXPECT_EQ(r.verdict, Verdict::kOk);
  EXPECT_EQ(r.reason, "no PCIe errors (0000:3b:00.0) since the function was enumerated");
  Timeline old;
  r = old.At(seconds(0), 0, 1, 0);
  EXPECT_EQ(r.verdict, Verdict::kWarning);
  EXPECT_THAT(r.reason, HasSubstr("0 fatal and 1 non-fatal PCIe errors (0000:3b:00.0) since the function was "
                                  "enumerated (CmpltTO 1); whether they are recent needs a second collection"));
  EXPECT_THAT(r.fix, HasSubstr("lspci -vvv -s 0000:3b:00.0"));
  Timeline corrected;
  r = corrected.At(seconds(0), 5, 0, 0);
  EXPECT_EQ(r.verdict, Verdict::kUnknown);
  EXPECT_THAT(r.reason, HasSubstr("5 correctable PCIe errors"));
}

TEST(PcieAerCheckTest, AnUncorrectableErrorFailsForAnHourThenOk) {
  Timeline tl;
  tl.At(seconds(0), 0, 1, 0);  // one old non-fatal error, from before the daemon started
  EXPECT_EQ(tl.At(seconds(15), 0, 1, 0).verdict, Verdict::kOk);  // no increase
  CheckResult r = tl.At(seconds(30), 0, 1, 1);
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_THAT(r.reason, HasSubstr("1 fatal and 0 non-fatal PCIe errors (0000:3b:00.0) in the last hour"));
  EXPECT_THAT(r.reason, HasSubstr("DLP 1; CmpltTO 1"));
  EXPECT_EQ(tl.At(minutes(59), 0, 1, 1).verdict, Verdict::kFailed);
  EXPECT_EQ(tl.At(minutes(62), 0, 1, 1).verdict, Verdict::kOk);
}

TEST(PcieAerCheckTest, CorrectableErrorsWarnAboveTheLimitAndResetsAreNoErrors) {
  Timeline tl;
  tl.At(seconds(0), 100, 0, 0);
  EXPECT_EQ(tl.At(minutes(30), 120, 0, 0).verdict, Verdict::kOk);  // 20 within the hour
  EXPECT_EQ(tl.At(minutes(35), 160, 0, 0).verdict, Verdict::kOk);  // 60: the limit, not above it
  CheckResult r = tl.At(minutes(40), 200, 0, 0);                  // 100 within the hour
  EXPECT_EQ(r.verdict, Verdict::kWarning);
  EXPECT_THAT(r.reason, HasSubstr("100 correctable PCIe errors (0000:3b:00.0) in 2400 s, more than 60 within an "
                                  "hour (since boot: RxErr 200): a marginal link, retried by the hardware"));
  // The device re-enumerated at another address: counts start again, no negative increase.
  EXPECT_EQ(tl.At(minutes(41), 0, 0, 0, "0000:af:00.0").verdict, Verdict::kOk);
  EXPECT_EQ(tl.At(minutes(42), 0, 0, 0, "0000:af:00.0").verdict, Verdict::kOk);
  // A driver reload that zeroed the counts: a new baseline, not an error.
  Timeline reset;
  reset.At(seconds(0), 50, 2, 0);
  EXPECT_EQ(reset.At(seconds(15), 0, 0, 0).verdict, Verdict::kOk);
}

// One correctable error (RxErr 2 -> 3) seen in 16 s is one error within the hour, not "above 60 an
// hour" (the daemon used to scale it to 225 an hour, and kept warning while the span stayed short).
TEST(PcieAerCheckTest, OneCorrectableErrorInAShortSpanIsOneNotARate) {
  Timeline tl;
  tl.At(seconds(0), 2, 0, 0);
  CheckResult r = tl.At(seconds(16), 3, 0, 0);
  EXPECT_EQ(r.verdict, Verdict::kOk);
  EXPECT_EQ(r.reason, "no uncorrectable PCIe errors (0000:3b:00.0) in the last hour, 1 correctable in 16 s (at most "
                      "60 within an hour)");
  EXPECT_EQ(tl.At(seconds(64), 3, 0, 0).verdict, Verdict::kOk);
  // 61 more: 62 within the hour, more than 60, however short the span.
  r = tl.At(seconds(80), 64, 0, 0);
  EXPECT_EQ(r.verdict, Verdict::kWarning);
  EXPECT_THAT(r.reason, HasSubstr("62 correctable PCIe errors (0000:3b:00.0) in 80 s, more than 60 within an hour"));
  Timeline burst;
  burst.At(seconds(0), 0, 0, 0);
  r = burst.At(seconds(10), 61, 0, 0);
  EXPECT_EQ(r.verdict, Verdict::kWarning);
  EXPECT_THAT(r.reason, HasSubstr("61 correctable PCIe errors (0000:3b:00.0) in 10 s, more than 60 within an hour"));
}

}  // namespace
}  // namespace rdmahd
