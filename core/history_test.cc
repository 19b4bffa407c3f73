#include "core/history.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace rdmahd {
namespace {

using std::chrono::seconds;
using Baseline = History::Baseline;

const History::TimePoint kT0 = History::TimePoint{} + std::chrono::hours(100);
History::TimePoint At(int s) { return kT0 + seconds(s); }

TEST(HistoryTest, OneSampleIsUnknownTwoGiveIncreaseAndRate) {
  History h;
  EXPECT_EQ(h.RecordCounter("c", 1, 100, At(0)), Baseline::kFirst);
  EXPECT_FALSE(h.Increase("c", seconds(60), At(0)));
  EXPECT_FALSE(h.Rate("c", seconds(60), At(0)));
  EXPECT_FALSE(h.LastStep("c"));
  EXPECT_FALSE(h.Increase("nothing", seconds(60), At(0)));

  EXPECT_EQ(h.RecordCounter("c", 1, 160, At(30)), Baseline::kContinued);
  auto g = h.Increase("c", seconds(60), At(30));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->increase, 60u);
  EXPECT_DOUBLE_EQ(g->seconds, 30);
  EXPECT_DOUBLE_EQ(*h.Rate("c", seconds(60), At(30)), 2.0);
  auto step = h.LastStep("c");
  ASSERT_TRUE(step);
  EXPECT_EQ(step->increase, 60u);
  EXPECT_DOUBLE_EQ(step->seconds, 30);
}

TEST(HistoryTest, IncreaseCountsOnlyTheWindow) {
  History h;
  h.RecordCounter("c", 1, 0, At(0));
  h.RecordCounter("c", 1, 10, At(10));
  h.RecordCounter("c", 1, 30, At(20));
  h.RecordCounter("c", 1, 60, At(30));
  // Window [15, 30]: the samples at 20 and 30.
  auto g = h.Increase("c", seconds(15), At(30));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->increase, 30u);
  EXPECT_DOUBLE_EQ(g->seconds, 10);
  // Window [25, 30] holds one sample: unknown.
  EXPECT_FALSE(h.Increase("c", seconds(5), At(30)));
  // The whole series.
  EXPECT_EQ(h.Increase("c", seconds(100), At(30))->increase, 60u);
  // Nothing recorded within the window ending later: unknown, not zero.
  EXPECT_FALSE(h.Increase("c", seconds(10), At(100)));
}

TEST(HistoryTest, AnUnchangedValueExtendsItsSampleAndStillCountsAsSeenBeforeTheWindow) {
  History h;
  for (int t = 0; t <= 100; t += 10) h.RecordCounter("c", 1, 5, At(t));
  EXPECT_EQ(h.Samples("c").size(), 1u);  // one change-free stretch is one sample
  h.RecordCounter("c", 1, 8, At(110));
  ASSERT_EQ(h.Samples("c").size(), 2u);
  EXPECT_EQ(h.Samples("c")[0].first, At(0));
  EXPECT_EQ(h.Samples("c")[0].last, At(100));
  // Window [80, 110]: 5 seen at 80..100, so the counter was 5 at 80.
  auto g = h.Increase("c", seconds(30), At(110));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->increase, 3u);
  EXPECT_DOUBLE_EQ(g->seconds, 30);
  EXPECT_DOUBLE_EQ(*h.Rate("c", seconds(30), At(110)), 0.1);
  // The last step is from the collection at 100.
  EXPECT_EQ(h.LastStep("c")->increase, 3u);
  EXPECT_DOUBLE_EQ(h.LastStep("c")->seconds, 10);
  h.RecordCounter("c", 1, 8, At(120));
  EXPECT_EQ(h.LastStep("c")->increase, 0u);
  EXPECT_DOUBLE_EQ(h.LastStep("c")->seconds, 10);
}

TEST(HistoryTest, ResetStartsANewBaselineNeverANegativeIncrease) {
  History h;
  h.RecordCounter("c", 1, 1000, At(0));
  h.RecordCounter("c", 1, 1500, At(10));
  EXPECT_EQ(h.RecordCounter("c", 1, 20, At(20)), Baseline::kReset);  // driver reloaded
  EXPECT_FALSE(h.Increase("c", seconds(60), At(20)));                // one sample in this baseline
  EXPECT_FALSE(h.LastStep("c"));
  h.RecordCounter("c", 1, 50, At(30));
  EXPECT_EQ(h.Increase("c", seconds(60), At(30))->increase, 30u);
  EXPECT_EQ(h.LastStep("c")->increase, 30u);
  // The old baseline's samples stay, numbered apart, for callers that replay a timeline.
  auto s = h.Samples("c");
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[1].baseline, 0u);
  EXPECT_EQ(s[2].baseline, 1u);
  EXPECT_EQ(s[2].value, 20u);
}

TEST(HistoryTest, A32BitCounterWrapsFromTheUpperHalfOfItsRange) {
  History h;
  h.RecordCounter("carrier", 1, 0xFFFFFFF0u, At(0), 32);
  EXPECT_EQ(h.RecordCounter("carrier", 1, 0x10, At(10), 32), Baseline::kWrap);
  EXPECT_FALSE(h.Increase("carrier", seconds(60), At(10)));
  h.RecordCounter("carrier", 1, 0x20, At(20), 32);
  EXPECT_EQ(h.Increase("carrier", seconds(60), At(20))->increase, 0x10u);
  // Down from the lower half of its range: a reset, not a wrap.
  EXPECT_EQ(h.RecordCounter("carrier", 1, 3, At(30), 32), Baseline::kReset);
  // The same fall in a 64-bit counter is a reset too.
  h.RecordCounter("wide", 1, 0xFFFFFFF0u, At(0));
  EXPECT_EQ(h.RecordCounter("wide", 1, 0x10, At(10)), Baseline::kReset);
}

TEST(HistoryTest, AnotherInstanceIsARecreatedDeviceEvenWhenTheValueGrew) {
  History h;
  h.RecordCounter("mlx5_0/1/link_downed", 7, 3, At(0));
  h.RecordCounter("mlx5_0/1/link_downed", 7, 4, At(10));
  // Re-created between collections; the new device's counter happens to be higher already.
  EXPECT_EQ(h.RecordCounter("mlx5_0/1/link_downed", 8, 9, At(20)), Baseline::kRecreated);
  EXPECT_FALSE(h.Increase("mlx5_0/1/link_downed", seconds(60), At(20)));
  EXPECT_EQ(h.RecordCounter("mlx5_0/1/link_downed", 8, 10, At(30)), Baseline::kContinued);
  EXPECT_EQ(h.Increase("mlx5_0/1/link_downed", seconds(60), At(30))->increase, 1u);
}

TEST(HistoryTest, GaugesGoDownWithoutANewBaseline) {
  History h;
  h.RecordGauge("state", 1, At(0));
  h.RecordGauge("state", 0, At(10));
  h.RecordGauge("state", 0, At(20));
  h.RecordGauge("state", 1, At(30));
  auto s = h.Samples("state");
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[1].value, 0u);
  EXPECT_EQ(s[1].first, At(10));
  EXPECT_EQ(s[1].last, At(20));
  EXPECT_FALSE(h.Increase("state", seconds(60), At(30)));  // increases are for counters
}

TEST(HistoryTest, SamplesPerSeriesAreBoundedOldestFirstOut) {
  History h(History::Limits{.max_samples = 4});
  for (int t = 0; t < 10; ++t) h.RecordCounter("c", 1, static_cast<std::uint64_t>(t), At(t));
  auto s = h.Samples("c");
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s.front().value, 6u);
  EXPECT_EQ(s.back().value, 9u);
  EXPECT_EQ(h.Increase("c", seconds(100), At(9))->increase, 3u);  // what is left of the window
}

TEST(HistoryTest, IdleSeriesAreEvictedAndTheLeastRecentGoesWhenFull) {
  History h(History::Limits{.max_samples = 4, .max_series = 3, .idle = seconds(60)});
  h.RecordCounter("a", 1, 1, At(0));
  h.RecordCounter("b", 1, 1, At(10));
  h.RecordCounter("c", 1, 1, At(20));
  h.RecordCounter("a", 1, 2, At(30));
  h.RecordCounter("d", 1, 1, At(40));  // full: b, recorded least recently, goes
  EXPECT_EQ(h.Names(""), (std::vector<std::string>{"a", "c", "d"}));
  h.Evict(At(85));  // c last recorded at 20: idle for 65 s
  EXPECT_EQ(h.Names(""), (std::vector<std::string>{"a", "d"}));
  h.Forget("a");
  EXPECT_EQ(h.series(), 1u);
  // Hostile names are refused, not stored.
  EXPECT_EQ(h.RecordCounter(std::string(History::kMaxNameBytes + 1, 'x'), 1, 1, At(90)), Baseline::kRefused);
  EXPECT_EQ(h.series(), 1u);
}

TEST(HistoryTest, SamplesUnderAPrefixAreEachSeriesInOrderAsSamplesGivesThem) {
  History h;
  h.RecordGauge("hw/mlx5_10/device", 0, At(0));
  h.RecordGauge("hw/mlx5_1/port/1", 0, At(0));
  h.RecordGauge("hw/mlx5_1/port/1", 7, At(15));
  h.RecordGauge("hw/mlx5_1/device", 0, At(15));
  h.RecordGauge("hwx/other", 1, At(15));
  h.RecordCounter("flaps/mlx5_1", 1, 3, At(15));
  const auto under = h.SamplesUnder("hw/mlx5_1/");
  ASSERT_EQ(under.size(), 2u);
  EXPECT_EQ(under[0].first, "hw/mlx5_1/device");
  EXPECT_EQ(under[1].first, "hw/mlx5_1/port/1");
  for (const auto& [name, samples] : under) {
    const auto one_by_one = h.Samples(name);
    ASSERT_EQ(samples.size(), one_by_one.size()) << name;
    for (std::size_t i = 0; i < samples.size(); ++i) {
      EXPECT_EQ(samples[i].value, one_by_one[i].value);
      EXPECT_EQ(samples[i].first, one_by_one[i].first);
      EXPECT_EQ(samples[i].last, one_by_one[i].last);
    }
  }
  EXPECT_EQ(under[1].second.back().value, 7u);
  EXPECT_EQ(h.SamplesUnder("hw/").size(), 3u);
  EXPECT_TRUE(h.SamplesUnder("nothing/").empty());
}

// Increase()'s arithmetic on samples its caller keeps: a value seen before the window counts from
// the window's start; one point in the window, or none, is unknown.
TEST(HistoryTest, BetweenTwoSamplesIsIncreasesArithmetic) {
  const History::Sample run{At(0), At(1200), 7, 0};
  const auto g = History::Between(run, run, At(600));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->increase, 0u);
  EXPECT_DOUBLE_EQ(g->seconds, 600);
  const auto grew = History::Between(run, History::Sample{At(1215), At(1215), 9, 0}, At(615));
  ASSERT_TRUE(grew);
  EXPECT_EQ(grew->increase, 2u);
  EXPECT_DOUBLE_EQ(grew->seconds, 600);
  EXPECT_FALSE(History::Between(run, run, At(1200)));  // one point in the window
  EXPECT_FALSE(History::Between(run, run, At(1300)));  // seen before the window only
  const History::Sample once{At(30), At(30), 7, 0};
  EXPECT_FALSE(History::Between(once, once, At(0)));
}

// A Refs keeps no names: its caller passes series i's name as a Key (dir and leaf) with each call.
TEST(HistoryTest, RefsFindTheSeriesTheirKeysName) {
  History h;
  History::Refs refs(2);
  ASSERT_EQ(refs.size(), 2u);
  const History::Key key{"port_errors/mlx5_0/1/", "symbol_error"};
  const History::Key packets{"port_errors/mlx5_0/1/", "port_rcv_packets"};
  {
    History::Batch batch(h);
    EXPECT_EQ(batch.RecordCounter(refs, 0, key, 1, 10, At(0)), Baseline::kFirst);
    EXPECT_EQ(batch.RecordCounter(refs, 0, key, 1, 25, At(30)), Baseline::kContinued);
    EXPECT_FALSE(batch.Increase(refs, 1, packets, seconds(60), At(30)));
    EXPECT_EQ(batch.RecordCounter(refs, 1, packets, 1, 100, At(30)), Baseline::kFirst);
  }
  // The same series by its whole name, and by a key split at another slash.
  EXPECT_EQ(h.Samples("port_errors/mlx5_0/1/symbol_error").size(), 2u);
  History::Refs other(1);
  EXPECT_EQ(h.Increase(other, 0, {"port_errors/", "mlx5_0/1/symbol_error"}, seconds(60), At(30))->increase, 15u);
  EXPECT_EQ(h.RecordCounter("port_errors/mlx5_0/1/symbol_error", 1, 40, At(60)), Baseline::kContinued);
  EXPECT_EQ(h.RecordCounter("port_errors/mlx5_0/1/port_rcv_packets", 1, 160, At(60)), Baseline::kContinued);
  EXPECT_EQ(h.Increase(refs, 0, key, seconds(90), At(60))->increase, 30u);
  EXPECT_EQ(h.Increase(refs, 1, packets, seconds(90), At(60))->increase, 60u);
  // Forgotten, the refs find nothing of that series (and the other series still); recorded again,
  // a new series.
  h.Forget("port_errors/mlx5_0/1/symbol_error");
  EXPECT_FALSE(h.Increase(refs, 0, key, seconds(90), At(60)));
  EXPECT_EQ(h.Increase(refs, 1, packets, seconds(90), At(60))->increase, 60u);
  // A series dropped and another created in its slab place: the refs find each by name again.
  h.Forget("port_errors/mlx5_0/1/port_rcv_packets");
  EXPECT_EQ(h.RecordCounter("elsewhere/other", 1, 5, At(60)), Baseline::kFirst);
  EXPECT_FALSE(h.Increase(refs, 1, packets, seconds(90), At(60)));
  History::Batch batch(h);
  EXPECT_EQ(batch.RecordCounter(refs, 0, key, 1, 40, At(90)), Baseline::kFirst);
  EXPECT_EQ(batch.RecordCounter(refs, 1, packets, 1, 200, At(90)), Baseline::kFirst);
}

// A gauge through a Refs: the series its whole name names, found again after it is dropped.
TEST(HistoryTest, RefsRecordAndAskGaugesAsTheirNamesDo) {
  History h;
  History::Refs refs(2);
  const History::Key gauge{"port_errors/mlx5_0/1/", "steady@7"};
  {
    History::Batch batch(h);
    EXPECT_FALSE(batch.Newest(refs, 1, gauge));
    EXPECT_TRUE(batch.RecordGauge(refs, 1, gauge, 0b101, At(0)));
    EXPECT_TRUE(batch.RecordGauge(refs, 1, gauge, 0b101, At(15)));
    EXPECT_TRUE(batch.RecordGauge(refs, 1, gauge, 0b100, At(30)));
    ASSERT_TRUE(batch.Newest(refs, 1, gauge));
    EXPECT_EQ(batch.Newest(refs, 1, gauge)->value, 0b100u);
    EXPECT_EQ(batch.Samples(refs, 1, gauge).size(), 2u);
  }
  const std::vector<History::Sample> samples = h.Samples("port_errors/mlx5_0/1/steady@7");
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0].value, 0b101u);
  EXPECT_EQ(samples[0].first, At(0));
  EXPECT_EQ(samples[0].last, At(15));
  EXPECT_EQ(h.Newest(refs, 1, gauge)->last, At(30));
  EXPECT_EQ(h.Samples(refs, 1, gauge).size(), 2u);
  h.Forget("port_errors/mlx5_0/1/steady@7");
  EXPECT_FALSE(h.Newest(refs, 1, gauge));
  EXPECT_TRUE(h.Samples(refs, 1, gauge).empty());
  History::Batch batch(h);
  EXPECT_TRUE(batch.RecordGauge(refs, 1, gauge, 1, At(45)));
  EXPECT_EQ(batch.Samples(refs, 1, gauge).size(), 1u);
}

// A Refs holds four bytes a series in one heap block, and one generation for them all.
TEST(HistoryTest, RefsCostFourBytesASeries) {
  static_assert(sizeof(History::Refs) <= 24);
#if !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
  const std::size_t before = mallinfo2().uordblks;
  History::Refs refs(1000);
  const std::size_t measured = mallinfo2().uordblks - before;
  EXPECT_LE(measured, 4 * 1000 + 32);
#endif
}

// Series are filed by dir, but listed in their names' order: "a/b/c/d" sorts before "a/b/ca".
TEST(HistoryTest, NamesAreInTheOrderOfTheWholeNames) {
  History h;
  for (const char* name : {"a/b/ca", "a/b/c/d", "a/b/c", "a/bc", "a/b/c/a", "b"}) h.RecordGauge(name, 1, At(0));
  EXPECT_EQ(h.Names("a/b/c"), (std::vector<std::string>{"a/b/c", "a/b/c/a", "a/b/c/d", "a/b/ca"}));
  EXPECT_EQ(h.Names("a/b"), (std::vector<std::string>{"a/b/c", "a/b/c/a", "a/b/c/d", "a/b/ca", "a/bc"}));
  EXPECT_EQ(h.Names("").size(), 6u);
  EXPECT_EQ(h.SamplesUnder("a/b/c/").size(), 2u);
  h.Forget("a/b/c/a");
  h.Forget("a/b/c/d");
  EXPECT_EQ(h.Names("a/b/c"), (std::vector<std::string>{"a/b/c", "a/b/ca"}));
  EXPECT_EQ(h.series(), 4u);
}

TEST(HistoryTest, AHandleRecordsAndAsksTheSeriesItsNameDoes) {
  History h;
  History::Handle c("c");
  EXPECT_FALSE(h.Increase(c, seconds(60), At(0)));  // nothing recorded yet
  EXPECT_FALSE(h.Newest(c));
  EXPECT_EQ(h.RecordCounter(c, 1, 100, At(0)), Baseline::kFirst);
  EXPECT_EQ(h.RecordCounter(c, 1, 160, At(30)), Baseline::kContinued);
  EXPECT_EQ(h.RecordCounter("c", 1, 170, At(40)), Baseline::kContinued);  // the same series by name
  auto g = h.Increase(c, seconds(60), At(40));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->increase, 70u);
  EXPECT_DOUBLE_EQ(g->seconds, 40);
  EXPECT_EQ(h.Samples(c).size(), 3u);
  EXPECT_EQ(h.Samples(c).back().value, h.Samples("c").back().value);
  EXPECT_EQ(h.Newest(c)->value, 170u);
  EXPECT_EQ(h.RecordCounter(c, 1, 5, At(50)), Baseline::kReset);

  // A series another caller creates by name after the handle found none is found.
  History::Handle g1("g");
  EXPECT_FALSE(h.Newest(g1));
  EXPECT_TRUE(h.RecordGauge("g", 7, At(0)));
  ASSERT_TRUE(h.Newest(g1));
  EXPECT_EQ(h.Newest(g1)->value, 7u);
  EXPECT_TRUE(h.RecordGauge(g1, 8, At(10)));
  EXPECT_EQ(h.Samples("g").back().value, 8u);
  // Recorded as the other kind, the series starts over, as by name.
  EXPECT_EQ(h.RecordCounter(g1, 1, 3, At(20)), Baseline::kFirst);
  EXPECT_EQ(h.Samples("g").size(), 1u);
  EXPECT_FALSE(h.Increase(c, seconds(1), At(1000)));  // window past the newest sample
  // Names past the limit are refused through a handle too.
  History::Handle long_name(std::string(History::kMaxNameBytes + 1, 'x'));
  EXPECT_EQ(h.RecordCounter(long_name, 1, 1, At(60)), Baseline::kRefused);
  EXPECT_FALSE(h.RecordGauge(long_name, 1, At(60)));
  EXPECT_EQ(h.series(), 2u);
}

// A node with more series than the bound, recorded every collection at the collection's time: the
// series that found room keep it (their rates become known), the others are refused and counted,
// rather than each collection evicting the series the next one needs. Series of a subject that is
// no longer recorded make room for another at the next collection.
TEST(HistoryTest, WhenFullTheSeriesOfThisCollectionStayAndNewOnesAreRefused) {
  History h(History::Limits{.max_samples = 4, .max_series = 3, .idle = std::chrono::hours(1)});
  std::vector<History::Handle> handles;
  for (const char* name : {"a", "b", "c", "d", "e"}) handles.emplace_back(name);
  for (int collection = 0; collection < 3; ++collection) {
    for (std::size_t i = 0; i < handles.size(); ++i) {
      const Baseline b = h.RecordCounter(handles[i], 1, 10 * static_cast<std::uint64_t>(collection), At(collection * 15));
      if (i < 3) {
        EXPECT_EQ(b, collection == 0 ? Baseline::kFirst : Baseline::kContinued) << handles[i].name();
      } else {
        EXPECT_EQ(b, Baseline::kRefused) << handles[i].name();
      }
    }
  }
  EXPECT_EQ(h.Names(""), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(h.refused(), 6u);
  EXPECT_EQ(h.Increase(handles[0], seconds(60), At(30))->increase, 20u);
  EXPECT_FALSE(h.Increase(handles[4], seconds(60), At(30)));

  // b is not recorded at the next collection: d takes its place; e is still refused.
  for (std::size_t i : {0, 2, 3, 4}) h.RecordCounter(handles[i], 1, 30, At(45));
  EXPECT_EQ(h.Names(""), (std::vector<std::string>{"a", "c", "d"}));
  EXPECT_EQ(h.refused(), 7u);
  EXPECT_EQ(h.Samples(handles[3]).size(), 1u);
  // A gauge is refused the same way.
  EXPECT_FALSE(h.RecordGauge("f", 1, At(45)));
  EXPECT_TRUE(h.RecordGauge("f", 1, At(60)));  // a later time: the least recently recorded, a, goes
  EXPECT_EQ(h.Names(""), (std::vector<std::string>{"c", "d", "f"}));
}

// Eviction follows the order series were last recorded in, through forgets and kind changes.
TEST(HistoryTest, TheLeastRecentlyRecordedGoesFirstThroughForgetsAndKindChanges) {
  History h(History::Limits{.max_samples = 4, .max_series = 3, .idle = seconds(100)});
  h.RecordCounter("a", 1, 1, At(0));
  h.RecordCounter("b", 1, 1, At(1));
  h.RecordCounter("c", 1, 1, At(2));
  h.RecordGauge("a", 5, At(3));  // a counter recorded as a gauge starts over, as the newest
  h.Forget("c");
  h.RecordCounter("d", 1, 1, At(4));  // room left by c
  h.RecordCounter("e", 1, 1, At(5));  // full: b goes
  EXPECT_EQ(h.Names(""), (std::vector<std::string>{"a", "d", "e"}));
  h.RecordCounter("f", 1, 1, At(6));  // then a
  EXPECT_EQ(h.Names(""), (std::vector<std::string>{"d", "e", "f"}));
  h.Evict(At(105));  // d, recorded at 4, is idle for 101 s; e (5) for 100, not more
  EXPECT_EQ(h.Names(""), (std::vector<std::string>{"e", "f"}));
  h.Evict(At(200));
  EXPECT_EQ(h.series(), 0u);
  h.RecordCounter("g", 1, 1, At(201));  // the emptied order takes a series again
  h.RecordCounter("h", 1, 1, At(202));
  h.RecordCounter("i", 1, 1, At(203));
  h.RecordCounter("j", 1, 1, At(204));
  EXPECT_EQ(h.Names(""), (std::vector<std::string>{"h", "i", "j"}));
  EXPECT_EQ(h.refused(), 0u);
  h.SetMaxSeries(2);  // lowered: the least recently recorded goes
  EXPECT_EQ(h.Names(""), (std::vector<std::string>{"i", "j"}));
  h.RecordCounter("k", 1, 1, At(205));
  EXPECT_EQ(h.Names(""), (std::vector<std::string>{"j", "k"}));
}

TEST(HistoryTest, AHandleOfAForgottenOrEvictedSeriesFindsItUnknownThenRecordsAnew) {
  History h(History::Limits{.max_samples = 4, .max_series = 2, .idle = seconds(60)});
  History::Handle a("a"), b("b"), c("c");
  h.RecordCounter(a, 1, 1, At(0));
  h.RecordCounter(a, 1, 2, At(10));
  ASSERT_TRUE(h.Increase(a, seconds(60), At(10)));
  h.Forget("a");
  EXPECT_FALSE(h.Increase(a, seconds(60), At(10)));
  EXPECT_TRUE(h.Samples(a).empty());
  EXPECT_EQ(h.RecordCounter(a, 1, 3, At(20)), Baseline::kFirst);  // a new series, one sample
  EXPECT_EQ(h.Samples(a).size(), 1u);

  // Full: recording c evicts a (recorded least recently); a's handle sees that.
  h.RecordCounter(b, 1, 1, At(30));
  h.RecordCounter(c, 1, 1, At(40));
  EXPECT_EQ(h.Names(""), (std::vector<std::string>{"b", "c"}));
  EXPECT_FALSE(h.Newest(a));
  EXPECT_EQ(h.Newest(c)->value, 1u);

  // Idle: c (recorded at 40, then 95) stays, b goes.
  h.RecordCounter(c, 1, 2, At(95));
  h.Evict(At(100));
  EXPECT_EQ(h.Names(""), (std::vector<std::string>{"c"}));
  EXPECT_FALSE(h.Newest(b));
  EXPECT_EQ(h.Newest(c)->value, 2u);
  EXPECT_EQ(h.RecordCounter(b, 1, 9, At(110)), Baseline::kFirst);
  EXPECT_EQ(h.Names(""), (std::vector<std::string>{"b", "c"}));
}

TEST(HistoryTest, AHandleUsedWithAnotherHistoryFindsThatHistorysSeries) {
  History::Handle c("c");
  auto first = std::make_unique<History>();
  first->RecordCounter(c, 1, 1, At(0));
  first->RecordCounter(c, 1, 5, At(10));
  first.reset();
  // Possibly at the same address as the first: the handle must not reach the freed series.
  auto second = std::make_unique<History>();
  EXPECT_FALSE(second->Newest(c));
  second->RecordCounter("c", 1, 40, At(20));
  EXPECT_EQ(second->Newest(c)->value, 40u);
  EXPECT_EQ(second->Samples(c).size(), 1u);
}

TEST(HistoryTest, ABatchRecordsAndAsksAsTheHandleCallsDo) {
  History h;
  History::Handle c("c"), g("g");
  {
    History::Batch batch(h);
    EXPECT_FALSE(batch.Newest(c));
    EXPECT_EQ(batch.RecordCounter(c, 1, 10, At(0)), Baseline::kFirst);
    EXPECT_EQ(batch.RecordCounter(c, 1, 25, At(30)), Baseline::kContinued);
    EXPECT_TRUE(batch.RecordGauge(g, 1, At(30)));
    ASSERT_TRUE(batch.Increase(c, seconds(60), At(30)));
    EXPECT_EQ(batch.Increase(c, seconds(60), At(30))->increase, 15u);
    EXPECT_EQ(batch.Samples(c).size(), 2u);
    EXPECT_EQ(batch.Newest(g)->value, 1u);
  }
  // Released: the history's own calls see what the batch recorded.
  EXPECT_EQ(h.Increase("c", seconds(60), At(30))->increase, 15u);
  EXPECT_EQ(h.Names(""), (std::vector<std::string>{"c", "g"}));
}

// One thread records through handles in batches while another forgets and re-creates the same
// series by name: every handle call finds the series that exists at that moment.
TEST(HistoryTest, HandlesStayValidWhileAnotherThreadDropsTheirSeries) {
  History h(History::Limits{.max_samples = 8, .max_series = 8, .idle = std::chrono::hours(1)});
  std::atomic<bool> done{false};
  std::thread churn([&] {
    for (int i = 0; !done.load(); ++i) {
      std::string name = "s";
      name += std::to_string(i % 12);
      if (i % 3 == 0) {
        h.Forget(name);
      } else {
        h.RecordCounter(name, 2, static_cast<std::uint64_t>(i), At(i));
      }
    }
  });
  std::vector<History::Handle> handles;
  for (int i = 0; i < 12; ++i) {
    std::string name = "s";
    name += std::to_string(i);
    handles.emplace_back(std::move(name));
  }
  for (int round = 0; round < 2000; ++round) {
    History::Batch batch(h);
    for (History::Handle& handle : handles) {
      batch.RecordCounter(handle, 1, static_cast<std::uint64_t>(round), At(round));
      (void)batch.Increase(handle, seconds(60), At(round));
      if (auto newest = batch.Newest(handle)) {
        EXPECT_LE(newest->first, newest->last);
      }
    }
  }
  done = true;
  churn.join();
  EXPECT_LE(h.series(), 8u);
  EXPECT_LE(h.MemoryBytes(), History::MaxMemoryBytes(h.limits()));
}

// Handles hold nothing of the history: recording through them keeps the same bounds.
TEST(HistoryTest, RecordingThroughHandlesKeepsTheMemoryBound) {
  const History::Limits limits{.max_samples = 8, .max_series = 100, .idle = std::chrono::hours(1)};
  History h(limits);
  std::vector<History::Handle> handles;
  for (int i = 0; i < 300; ++i) {
    std::string name = "port_errors/mlx5_" + std::to_string(i) + "/1/";
    name.resize(History::kMaxNameBytes, 'x');
    handles.emplace_back(std::move(name));
  }
  for (int round = 0; round < 20; ++round) {
    for (std::size_t i = 0; i < handles.size(); ++i) {
      h.RecordCounter(handles[i], 1, static_cast<std::uint64_t>(round), At(round * 1000 + static_cast<int>(i)));
    }
    EXPECT_LE(h.series(), limits.max_series);
    EXPECT_LE(h.MemoryBytes(), History::MaxMemoryBytes(limits));
  }
  // The last 100 recorded are the ones kept, and their handles find them.
  EXPECT_EQ(h.series(), limits.max_series);
  EXPECT_FALSE(h.Newest(handles.front()));
  EXPECT_EQ(h.Newest(handles.back())->value, 19u);
  // Recorded on while nothing else is, they fill to max_samples and no further.
  for (int round = 20; round < 40; ++round) {
    for (std::size_t i = 200; i < handles.size(); ++i) {
      h.RecordCounter(handles[i], 1, static_cast<std::uint64_t>(round), At(round * 1000 + static_cast<int>(i)));
    }
  }
  EXPECT_EQ(h.series(), limits.max_series);
  EXPECT_EQ(h.Samples(handles.back()).size(), limits.max_samples);
  EXPECT_LE(h.MemoryBytes(), History::MaxMemoryBytes(limits));
}

// The bound in bytes, measured with the allocator: a history filled past every limit (more series
// than max_series, more changes than max_samples, the longest names) holds at most
// MaxMemoryBytes(), and MemoryBytes() tells what it holds.
TEST(HistoryTest, MemoryStaysWithinItsBoundMeasuredAtTheAllocator) {
  const History::Limits limits{.max_samples = 32, .max_series = 500, .idle = std::chrono::hours(1)};
  const std::size_t before = mallinfo2().uordblks;
  auto h = std::make_unique<History>(limits);
  for (int round = 0; round < 40; ++round) {
    for (int i = 0; i < 700; ++i) {
      std::string name = "link_flaps/mlx5_" + std::to_string(i) + "/1/";
      name.resize(History::kMaxNameBytes, 'x');
      h->RecordCounter(name, 1, static_cast<std::uint64_t>(round), At(round * 1000 + i));
    }
  }
  const std::size_t measured = mallinfo2().uordblks - before;
  EXPECT_EQ(h->series(), limits.max_series);
  EXPECT_LE(h->MemoryBytes(), History::MaxMemoryBytes(limits));
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "the sanitizer's allocator does not report to mallinfo2";
#endif
  EXPECT_LE(measured, History::MaxMemoryBytes(limits));
  // The accounting is within 10% of what the allocator handed out.
  EXPECT_NEAR(static_cast<double>(h->MemoryBytes()), static_cast<double>(measured), 0.1 * static_cast<double>(measured));
  h.reset();
  // All of it given back, but for the chunks of many sizes malloc's per-thread cache keeps (and
  // mallinfo2() counts as in use): a few KiB when this test runs alone in its process.
  EXPECT_LE(mallinfo2().uordblks, before + 16384);
}

// Most series of a large node hold one sample (a counter that does not move), ten or so to a dir
// (a port's counters): such a series costs a few dozen bytes, measured at the allocator, and its
// slot is reused once it is dropped, with every answer as before.
TEST(HistoryTest, AOneSampleSeriesCostsLittleMeasuredAtTheAllocator) {
  constexpr int kDirs = 10000;
  constexpr std::size_t kSeries = 10 * kDirs;
  const char* const leaves[] = {"symbol_error",         "link_error_recovery", "link_downed",
                                "port_rcv_errors",      "port_rcv_remote_physical_errors",
                                "port_xmit_discards",   "port_rcv_data",       "port_xmit_data",
                                "port_rcv_packets",     "port_xmit_packets"};
  const auto dir = [](int d) { return "port_errors/mlx5_" + std::to_string(d) + "/1/"; };
  const std::size_t before = mallinfo2().uordblks;
  auto h = std::make_unique<History>(History::Limits{.max_samples = 64, .max_series = kSeries});
  for (int round = 0; round < 2; ++round) {
    History::Batch batch(*h);
    for (int d = 0; d < kDirs; ++d) {
      for (int l = 0; l < 10; ++l) {
        History::Refs ref(1);
        batch.RecordCounter(ref, 0, {dir(d), leaves[l]}, static_cast<std::uint64_t>(d), static_cast<std::uint64_t>(l),
                            At(round * 30));
      }
    }
  }
  const std::size_t measured = mallinfo2().uordblks - before;
  ASSERT_EQ(h->series(), kSeries);
  RecordProperty("allocator_bytes_per_series", std::to_string(static_cast<double>(measured) / kSeries));
  RecordProperty("memory_bytes_per_series", std::to_string(static_cast<double>(h->MemoryBytes()) / kSeries));
  {
    const auto samples = h->Samples("port_errors/mlx5_77/1/link_downed");
    ASSERT_EQ(samples.size(), 1u);
    EXPECT_EQ(samples[0].first, At(0));
    EXPECT_EQ(samples[0].last, At(30));
    EXPECT_EQ(samples[0].value, 2u);
  }
  EXPECT_EQ(h->LastStep("port_errors/mlx5_77/1/link_downed")->increase, 0u);
  EXPECT_DOUBLE_EQ(h->LastStep("port_errors/mlx5_77/1/link_downed")->seconds, 30);
  EXPECT_EQ(h->Increase("port_errors/mlx5_77/1/link_downed", seconds(60), At(30))->increase, 0u);
#if !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
  EXPECT_LE(measured, 60 * kSeries);
  EXPECT_NEAR(static_cast<double>(h->MemoryBytes()), static_cast<double>(measured), 0.1 * static_cast<double>(measured));
#endif

  // A thousand dirs forgotten, their slots taken by series of other names that move; then the
  // history is full and the least recently recorded make room.
  for (int d = 0; d < 1000; ++d) {
    for (const char* leaf : leaves) h->Forget(dir(d) + leaf);
  }
  EXPECT_EQ(h->series(), kSeries - 10000);
  EXPECT_TRUE(h->Samples(dir(5) + "symbol_error").empty());
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 15000; ++i) {
      const std::string name = "moving/" + std::to_string(i / 10) + "/c" + std::to_string(i % 10);
      EXPECT_NE(h->RecordCounter(name, 1, static_cast<std::uint64_t>(i + 10 * round), At(60 + 30 * round)),
                Baseline::kRefused);
    }
  }
  EXPECT_EQ(h->series(), kSeries);
  EXPECT_EQ(h->refused(), 0u);
  EXPECT_TRUE(h->Samples(dir(1000) + "symbol_error").empty());  // evicted: recorded least recently
  EXPECT_EQ(h->Samples(dir(kDirs - 1) + "port_xmit_packets").size(), 1u);
  EXPECT_EQ(h->Samples(dir(kDirs - 1) + "port_xmit_packets")[0].value, 9u);
  {
    const auto moving = h->Samples("moving/1234/c5");
    ASSERT_EQ(moving.size(), 3u);
    EXPECT_EQ(moving[0].value, 12345u);
    EXPECT_EQ(moving[2].value, 12365u);
    EXPECT_EQ(moving[2].first, At(120));
  }
  const auto g = h->Increase("moving/1234/c5", seconds(60), At(120));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->increase, 20u);
  EXPECT_DOUBLE_EQ(g->seconds, 60);
  EXPECT_EQ(h->Names("moving/1234/").size(), 10u);
  EXPECT_LE(h->MemoryBytes(), History::MaxMemoryBytes(h->limits()));
  h.reset();
#if !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
  // All of it given back, but for the chunks of many sizes malloc's per-thread cache keeps (and
  // mallinfo2() counts as in use).
  EXPECT_LE(mallinfo2().uordblks, before + 16384);
#endif
}

}  // namespace
}  // namespace rdmahd
