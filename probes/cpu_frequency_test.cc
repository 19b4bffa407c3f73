#include "probes/cpu_frequency.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>

#include "config/policies.h"
#include "core/check.h"
#include "facts/peer_facts.h"
#include "tests/support/test_paths.h"

namespace rdmahd {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using testing::TempDir;

// A /proc/cpuinfo block as x86 kernels print it (fields trimmed to those around "cpu MHz").
std::string CpuinfoBlock(int cpu, const std::string& mhz) {
  return "processor\t: " + std::to_string(cpu) + "\nvendor_id\t: GenuineIntel\ncpu family\t: 6\n" +
         "model name\t: Intel(R) Xeon(R) CPU\ncpu MHz\t\t: " + mhz + "\ncache size\t: 33792 KB\n\n";
}

void Cpufreq(const TempDir& t, int cpu, const std::string& khz, const std::string& governor) {
  const std::string dir = "sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/cpufreq/";
  t.Write(dir + "scaling_cur_freq", khz + "\n");
  t.Write(dir + "scaling_governor", governor + "\n");
}

CpuList Cpus(std::uint32_t first, std::uint32_t last) { return CpuList({{first, last}}); }

// The two values of a real perftest warning (shared/fixtures/real/corpus/
// 11_perftest_ib_send_bw_n5_cpufreq_warning_pair.txt: "1499.707000 != 2522.763000"), in a cpuinfo
// without cpufreq (what a VM or a cloud instance shows).
TEST(CpuFrequencyTest, ConflictingCpuinfoFrequenciesAreNamedWithTheirCpus) {
  TempDir t;
  t.Write("proc/cpuinfo", CpuinfoBlock(0, "1499.707") + CpuinfoBlock(1, "2522.763") + CpuinfoBlock(2, "2522.763"));
  NodeFs fs(t.path() + "/sys", t.path() + "/proc");
  auto cpus = ReadCpuFrequencies(fs, Cpus(0, 2));
  ASSERT_EQ(cpus.size(), 3u);
  ASSERT_TRUE(cpus[0].mhz);
  EXPECT_DOUBLE_EQ(*cpus[0].mhz, 1499.707);
  EXPECT_TRUE(cpus[0].governor.empty());
  const std::string w = CpuFrequencyWarning(cpus);
  EXPECT_THAT(w, HasSubstr("conflicting CPU frequencies on the probe's CPUs: 1500 MHz (cpu 0) != 2523 MHz (cpu 1)"));
  EXPECT_THAT(w, HasSubstr("cpupower frequency-set -g performance"));
  EXPECT_THAT(w, Not(HasSubstr("CPU frequency governor")));  // no cpufreq: no governor to name
  // Only the thread's CPUs count: without cpu 0, the two at 2522.763 agree.
  EXPECT_THAT(CpuFrequencyWarning(ReadCpuFrequencies(fs, Cpus(1, 2))), IsEmpty());
}

TEST(CpuFrequencyTest, FrequenciesWithinFivePercentAgree) {
  TempDir t;
  t.Write("proc/cpuinfo", CpuinfoBlock(0, "2599.998") + CpuinfoBlock(1, "2480.000"));
  NodeFs fs(t.path() + "/sys", t.path() + "/proc");
  EXPECT_THAT(CpuFrequencyWarning(ReadCpuFrequencies(fs, Cpus(0, 1))), IsEmpty());  // 4.6% apart
  t.Write("proc/cpuinfo", CpuinfoBlock(0, "2599.998") + CpuinfoBlock(1, "2460.000"));
  EXPECT_THAT(CpuFrequencyWarning(ReadCpuFrequencies(fs, Cpus(0, 1))), HasSubstr("2460 MHz (cpu 1) != 2600 MHz (cpu 0)"));
}

TEST(CpuFrequencyTest, CpufreqWinsOverCpuinfoAndGovernorsOtherThanPerformanceAreNamed) {
  TempDir t;
  // cpuinfo says they agree; cpufreq (what the governor set) says otherwise, and is read first.
  t.Write("proc/cpuinfo", CpuinfoBlock(0, "3000.000") + CpuinfoBlock(1, "3000.000") + CpuinfoBlock(2, "3000.000") +
                              CpuinfoBlock(3, "3000.000"));
  Cpufreq(t, 0, "3000000", "performance");
  Cpufreq(t, 1, "3000000", "performance");
  Cpufreq(t, 2, "1200000", "powersave");
  Cpufreq(t, 3, "1200000", "powersave");
  NodeFs fs(t.path() + "/sys", t.path() + "/proc");
  auto cpus = ReadCpuFrequencies(fs, Cpus(0, 3));
  ASSERT_EQ(cpus.size(), 4u);
  EXPECT_EQ(cpus[2].governor, "powersave");
  const std::string w = CpuFrequencyWarning(cpus);
  EXPECT_THAT(w, HasSubstr("1200 MHz (cpu 2) != 3000 MHz (cpu 0)"));
  EXPECT_THAT(w, HasSubstr("CPU frequency governor powersave on cpus 2-3"));
  // All at performance and the same clock: nothing to say.
  Cpufreq(t, 2, "3000000", "performance");
  Cpufreq(t, 3, "3000000", "performance");
  EXPECT_THAT(CpuFrequencyWarning(ReadCpuFrequencies(fs, Cpus(0, 3))), IsEmpty());
  // A governed-down CPU is named even when every CPU happens to run at the same frequency now.
  Cpufreq(t, 1, "3000000", "schedutil");
  EXPECT_THAT(CpuFrequencyWarning(ReadCpuFrequencies(fs, Cpus(0, 3))), HasSubstr("governor schedutil on cpus 1"));
}

TEST(CpuFrequencyTest, HostileOrMissingFilesCostOnlyTheirValue) {
  TempDir t;
  Cpufreq(t, 0, "fast", "<script>alert(1)</script>");
  Cpufreq(t, 1, "2000000", "powersave\x1b[31m");
  t.Write("proc/cpuinfo", "processor : 0\ncpu MHz : nonsense\n\nprocessor : 99999999999\ncpu MHz : 1\n");
  NodeFs fs(t.path() + "/sys", t.path() + "/proc");
  auto cpus = ReadCpuFrequencies(fs, Cpus(0, 2));
  ASSERT_EQ(cpus.size(), 3u);
  EXPECT_FALSE(cpus[0].mhz);
  EXPECT_TRUE(cpus[0].governor.empty());  // not a governor's name: not shown
  ASSERT_TRUE(cpus[1].mhz);
  EXPECT_DOUBLE_EQ(*cpus[1].mhz, 2000.0);
  EXPECT_TRUE(cpus[1].governor.empty());
  EXPECT_FALSE(cpus[2].mhz);  // nothing at all for cpu 2
  EXPECT_THAT(CpuFrequencyWarning(cpus), IsEmpty());
  // Never more than kMaxFrequencyCpus CPUs read, however many the thread may use.
  EXPECT_EQ(ReadCpuFrequencies(fs, Cpus(0, 1000)).size(), kMaxFrequencyCpus);
}

// The peer_latency reason carries the warning beside the figure, whatever the verdict.
TEST(CpuFrequencyTest, PeerLatencyReasonSaysTheSamplesMayBeStretched) {
  auto peer = std::make_shared<PeerStatus>();
  peer->name = peer->address = "10.0.0.1";
  peer->last_latency = PeerProbeResult::kSuccess;
  PeerLatencyRound round;
  round.typical_us = 2;
  round.p99_us = round.p99_9_us = 30;
  round.max_us = 31;
  round.samples = 999;
  round.clock = "steady";
  round.cpu_warning = "CPU frequency governor powersave on cpus 0-3: latency samples are stretched and spread";
  peer->latency = round;
  PeerFacts facts;
  facts.peers.push_back(peer);
  Snapshot s;
  s.Put(std::move(facts));
  Config c;
  c.Section<PeersPolicy>().max_latency_p99_us = 20;
  auto v = RunRegisteredCheck("peer_latency", s, c);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].verdict, Verdict::kFailed);
  EXPECT_THAT(v[0].reason, HasSubstr("above the limit 20.00 us; CPU frequency governor powersave on cpus 0-3"));
  peer->latency->cpu_warning.clear();
  v = RunRegisteredCheck("peer_latency", s, c);
  EXPECT_THAT(v[0].reason, Not(HasSubstr("CPU frequency")));
}

}  // namespace
}  // namespace rdmahd
