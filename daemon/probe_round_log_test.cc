#include "daemon/probe_round_log.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace rdmahd {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::seconds;

ProbeRoundFacts Facts(std::uint64_t peers_failed, const std::string& error, std::uint64_t other_failed = 0) {
  ProbeRoundOutcome peers;
  peers.probe = "peers";
  peers.rounds = 100;
  peers.failed = peers_failed;
  peers.last_error = error;
  ProbeRoundOutcome other;
  other.probe = "other";
  other.rounds = 100;
  other.failed = other_failed;
  other.last_error = other_failed > 0 ? "other broke" : "";
  return ProbeRoundFacts{{peers, other}};
}

std::string Text(const std::vector<ProbeRoundLog::Line>& lines) {
  std::string out;
  for (const auto& l : lines) out += l.probe + " " + std::to_string(l.failed_rounds) + " " + l.error + "\n";
  return out;
}

TEST(ProbeRoundLogTest, TheFirstFailureAtOnceThenAtMostALineAMinuteWithTheCount) {
  ProbeRoundLog log;
  const Clock::time_point t0 = Clock::now();
  EXPECT_EQ(Text(log.Observe(Facts(0, ""), t0)), "");
  EXPECT_EQ(Text(log.Observe(Facts(2, "bad_alloc"), t0 + seconds(1))), "peers 2 bad_alloc\n");
  // The same report again (a second scrape of it), and more failures within the minute: quiet.
  EXPECT_EQ(Text(log.Observe(Facts(2, "bad_alloc"), t0 + seconds(2))), "");
  EXPECT_EQ(Text(log.Observe(Facts(40, "bad_alloc"), t0 + seconds(30))), "");
  // A minute after the last line: the rounds that failed since, with the latest message.
  EXPECT_EQ(Text(log.Observe(Facts(90, "resolver gone"), t0 + seconds(61))), "peers 88 resolver gone\n");
  // No new failure: nothing, however long it has been.
  EXPECT_EQ(Text(log.Observe(Facts(90, "resolver gone"), t0 + seconds(600))), "");
  // The next failure after a quiet spell is news at once.
  EXPECT_EQ(Text(log.Observe(Facts(91, "again"), t0 + seconds(601))), "peers 1 again\n");
}

TEST(ProbeRoundLogTest, ProbesAreCountedApartAndAnOlderReportAddsNothing) {
  ProbeRoundLog log;
  const Clock::time_point t0 = Clock::now();
  EXPECT_EQ(Text(log.Observe(Facts(3, "x", 1), t0)), "peers 3 x\nother 1 other broke\n");
  EXPECT_EQ(Text(log.Observe(Facts(1, "x", 0), t0 + seconds(120))), "");  // a report taken earlier
  EXPECT_EQ(Text(log.Observe(Facts(3, "x", 2), t0 + seconds(121))), "other 1 other broke\n");
}

}  // namespace
}  // namespace rdmahd
