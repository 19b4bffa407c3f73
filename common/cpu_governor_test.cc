#include "common/cpu_governor.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/support/test_paths.h"

namespace rdmahd {
namespace {

using testing::TempDir;

void Governor(const TempDir& t, int cpu, const std::string& text) {
  t.Write("sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/cpufreq/scaling_governor", text);
}

TEST(CpuGovernorTest, ReadsTheNameWithoutItsNewline) {
  TempDir t;
  Governor(t, 0, "performance\n");
  Governor(t, 3, "  schedutil \n");
  NodeFs fs(t.path() + "/sys", t.path() + "/proc");
  EXPECT_EQ(ReadScalingGovernor(fs, 0), "performance");
  EXPECT_EQ(ReadScalingGovernor(fs, 3), "schedutil");
  EXPECT_FALSE(ReadScalingGovernor(fs, 1));  // no cpufreq for cpu 1
}

// What a garbled or hostile file holds is never passed on (it would become a metric label or part
// of a reason).
TEST(CpuGovernorTest, OnlyAKernelIdentifierIsAName) {
  TempDir t;
  Governor(t, 0, "\n");
  Governor(t, 1, "<script>alert(1)</script>");
  Governor(t, 2, "powersave\x1b[31m");
  Governor(t, 3, "Performance");
  Governor(t, 4, std::string(33, 'a'));
  Governor(t, 5, std::string(32, 'a'));
  Governor(t, 6, "my_gov-2");
  NodeFs fs(t.path() + "/sys", t.path() + "/proc");
  for (int cpu = 0; cpu <= 4; ++cpu) EXPECT_FALSE(ReadScalingGovernor(fs, cpu)) << "cpu " << cpu;
  EXPECT_EQ(ReadScalingGovernor(fs, 5), std::string(32, 'a'));
  EXPECT_EQ(ReadScalingGovernor(fs, 6), "my_gov-2");
}

// Held: the same answer, the file kept open, and a change seen on the next read.
TEST(CpuGovernorTest, HeldReadsSeeTheCurrentGovernor) {
  TempDir t;
  Governor(t, 2, "powersave\n");
  Governor(t, 4, "garbage!\n");
  NodeFs fs(t.path() + "/sys", t.path() + "/proc");
  HeldFiles held;
  EXPECT_EQ(ReadScalingGovernor(fs, 2, &held), "powersave");
  EXPECT_EQ(held.size(), 1u);
  Governor(t, 2, "performance\n");
  EXPECT_EQ(ReadScalingGovernor(fs, 2, &held), "performance");
  EXPECT_EQ(held.size(), 1u);
  EXPECT_FALSE(ReadScalingGovernor(fs, 4, &held));
  EXPECT_FALSE(ReadScalingGovernor(fs, 7, &held));  // missing
}

}  // namespace
}  // namespace rdmahd
