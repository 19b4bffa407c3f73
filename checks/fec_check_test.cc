// fec over the history: collection after collection of FEC counters, with the netdev's speed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

#include "config/config.h"
#include "core/check.h"
#include "core/history.h"
#include "facts/fec_facts.h"
#include "facts/netdev_facts.h"

namespace rdmahd {
namespace {

using ::testing::HasSubstr;
using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

const History::TimePoint kT0 = History::TimePoint{} + hours(100);

struct Counters {
  std::uint64_t corrected = 0, uncorrectable = 0;
  std::optional<std::uint64_t> bits;
};

struct Timeline {
  Config config;
  History history;
  std::unique_ptr<Check> check = CheckRegistry().Find("link_margin")->factory();
  std::optional<std::int64_t> speed_mbps = 100000;
  FecMode mode = FecMode::kRs;

  CheckResult At(seconds t, Counters c) {
    FecFacts facts;
    FecNetdevFacts& f = facts.netdevs.emplace_back();
    f.netdev = "ens1f0np0";
    f.read = true;
    f.fec.ifindex = 7;
    f.fec.active = mode;
    f.fec.has_stats = true;
    f.fec.corrected_blocks.total = c.corrected;
    f.fec.uncorrectable_blocks.total = c.uncorrectable;
    f.fec.corrected_bits.total = c.bits;
    RdmaNetdevFacts netdevs;
    NetdevFacts& n = netdevs.netdevs.emplace_back();
    n.netdev = "ens1f0np0";
    n.present = true;
    n.speed_mbps = speed_mbps;
    Snapshot s;
    s.Put(std::move(facts));
    s.Put(std::move(netdevs));
    std::vector<CheckResult> out;
    RunCheck("link_margin", *check, s, config, history, kT0 + t, out);
    EXPECT_EQ(out.size(), 1u);
    return out.empty() ? CheckResult{} : out[0];
  }
};

TEST(FecCheckTest, OneCollectionJudgesCountsSinceTheStart) {
  Timeline clean;
  CheckResult r = clean.At(seconds(0), {0, 0, 0});
  EXPECT_EQ(r.verdict, Verdict::kOk);
  EXPECT_EQ(r.reason, "FEC rs, no corrected or uncorrectable block since the counters started");
  Timeline corrected;
  EXPECT_EQ(corrected.At(seconds(0), {1523, 0, 52461136}).verdict, Verdict::kUnknown);
  Timeline lost;
  r = lost.At(seconds(0), {1523, 4, 52461136});
  EXPECT_EQ(r.verdict, Verdict::kWarning);
  EXPECT_THAT(r.reason, HasSubstr("4 uncorrectable FEC blocks since the counters started"));
}

TEST(FecCheckTest, UncorrectableBlocksInTheLastHourFail) {
  Timeline t;
  t.At(seconds(0), {100, 2, 1000});
  EXPECT_EQ(t.At(minutes(1), {200, 2, 2000}).verdict, Verdict::kOk);
  CheckResult r = t.At(minutes(2), {300, 5, 3000});
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_EQ(r.reason, "3 uncorrectable FEC blocks in the last 120 s (FEC rs): frames are being lost on the link");
  EXPECT_THAT(r.fix, HasSubstr("clean the fiber connectors"));
  EXPECT_THAT(r.fix, HasSubstr("`ethtool -m ens1f0np0`"));
  EXPECT_EQ(t.At(minutes(150), {300, 5, 3000}).verdict, Verdict::kOk);  // an hour and more without
}

TEST(FecCheckTest, PreFecBerAboveTheThresholdWarns) {
  Timeline t;
  // 100 Gb/s for 100 s is 1e13 bits: 2e8 corrected bits is a ratio of 2e-5, above 1e-5.
  t.At(seconds(0), {0, 0, 0});
  CheckResult r = t.At(seconds(100), {1000, 0, 200000000});
  EXPECT_EQ(r.verdict, Verdict::kWarning);
  EXPECT_EQ(r.reason, "pre-FEC bit error ratio about 2.0e-05 (200000000 corrected bits in 100 s at 100 Gb/s; FEC rs), "
                      "above 1.0e-05: the link is near its margin and will lose frames or flap next");
  // 5e7 bits: 5e-6, under it.
  Timeline ok;
  ok.At(seconds(0), {0, 0, 0});
  r = ok.At(seconds(100), {1000, 0, 50000000});
  EXPECT_EQ(r.verdict, Verdict::kOk);
  EXPECT_EQ(r.reason, "FEC rs, no uncorrectable block in the last 100 s, pre-FEC bit error ratio about 5.0e-06 "
                      "(50000000 corrected bits in 100 s at 100 Gb/s)");
  // Without a corrected bits counter, corrected blocks give a lower bound.
  Timeline blocks;
  blocks.At(seconds(0), {0, 0, std::nullopt});
  r = blocks.At(seconds(100), {300000000, 0, std::nullopt});
  EXPECT_EQ(r.verdict, Verdict::kWarning);
  EXPECT_THAT(r.reason, HasSubstr("about 3.0e-05 (at least, from 300000000 corrected blocks in 100 s"));
  // The threshold is the config's.
  auto cfg = ParseConfig("host:\n  fec:\n    pre_fec_ber_warning: 1e-4\n", "test.yaml", PluginNames{});
  ASSERT_TRUE(cfg.ok()) << cfg.error().message;
  Timeline lenient;
  lenient.config = *cfg;
  lenient.At(seconds(0), {0, 0, 0});
  EXPECT_EQ(lenient.At(seconds(100), {1000, 0, 200000000}).verdict, Verdict::kOk);
}

// A ratio is a sustained rate: corrected bits seen over 10 s (`check --sample-interval=10s`) are
// not judged as one, and the verdict says how long it needs; none at all is a ratio of 0.
// Uncorrectable blocks are a count: any fails at once, however short the span.
TEST(FecCheckTest, APreFecRatioNeedsAMinuteOfSamples) {
  Timeline t;
  t.At(seconds(0), {0, 0, 0});
  CheckResult r = t.At(seconds(10), {1000, 0, 20000000});  // would be 2e-5
  EXPECT_EQ(r.verdict, Verdict::kUnknown);
  EXPECT_EQ(r.reason, "FEC rs, no uncorrectable block in the last 10 s; the pre-FEC bit error ratio needs 60 s of "
                      "samples, has 10 s (20000000 corrected bits in it)");
  r = t.At(seconds(60), {2000, 0, 120000000});  // 1.2e8 bits in 60 s: 2e-5
  EXPECT_EQ(r.verdict, Verdict::kWarning);
  EXPECT_THAT(r.reason, HasSubstr("about 2.0e-05 (120000000 corrected bits in 60 s at 100 Gb/s; FEC rs)"));
  Timeline clean;
  clean.At(seconds(0), {0, 0, 0});
  r = clean.At(seconds(10), {0, 0, 0});
  EXPECT_EQ(r.verdict, Verdict::kOk);
  EXPECT_EQ(r.reason, "FEC rs, no uncorrectable block in the last 10 s, pre-FEC bit error ratio about 0.0e+00 (0 "
                      "corrected bits in 10 s at 100 Gb/s)");
  Timeline lost;
  lost.At(seconds(0), {0, 0, 0});
  EXPECT_EQ(lost.At(seconds(2), {10, 1, 100}).verdict, Verdict::kFailed);
}

TEST(FecCheckTest, FecOffAt100GWarnsAndAt25GIsOk) {
  Timeline t;
  t.mode = FecMode::kOff;
  t.At(seconds(0), {0, 0, 0});
  CheckResult r = t.At(seconds(60), {0, 0, 0});
  EXPECT_EQ(r.verdict, Verdict::kWarning);
  EXPECT_THAT(r.reason, HasSubstr("FEC is off on a 100 Gb/s link"));
  EXPECT_EQ(r.fix, "`ethtool --set-fec ens1f0np0 encoding rs` (or `auto`), and the same FEC on the switch port");
  Timeline slow;
  slow.mode = FecMode::kOff;
  slow.speed_mbps = 25000;
  slow.At(seconds(0), {0, 0, 0});
  r = slow.At(seconds(60), {0, 0, 0});
  EXPECT_EQ(r.verdict, Verdict::kOk);
  EXPECT_THAT(r.reason, HasSubstr("at 25 Gb/s, which needs none"));
}

TEST(FecCheckTest, UnreadIsUnknownWithTheReason) {
  Config config;
  FecFacts facts;
  FecNetdevFacts& f = facts.netdevs.emplace_back();
  f.netdev = "veth0";
  f.note = "the driver of veth0 reports no FEC (EOPNOTSUPP: a virtual NIC, or a driver without the ethtool FEC operations)";
  Snapshot s;
  s.Put(std::move(facts));
  auto out = RunRegisteredCheck("link_margin", s, config);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].verdict, Verdict::kUnknown);
  EXPECT_EQ(out[0].reason, f.note);
}

}  // namespace
}  // namespace rdmahd
