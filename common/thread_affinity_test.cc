#include "common/thread_affinity.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sched.h>

#include <functional>
#include <thread>

namespace rdmahd {
namespace {

using ::testing::HasSubstr;

// Runs `body` on a thread of its own, so that pinning never leaks into the test runner's thread.
void OnOwnThread(const std::function<void()>& body) { std::thread(body).join(); }

CpuList One(std::uint32_t cpu) { return CpuList({{cpu, cpu}}); }

TEST(ThreadAffinityTest, TheCallingThreadRunsOnOneOfItsCpus) {
  const CpuList cpus = CallingThreadCpus();
  ASSERT_FALSE(cpus.empty());
  EXPECT_LE(cpus.count(), static_cast<std::uint64_t>(CPU_SETSIZE));
  EXPECT_TRUE(cpus.Contains(static_cast<std::uint32_t>(sched_getcpu())));
}

TEST(ThreadAffinityTest, PinnedThreadRunsOnlyThere) {
  const CpuList runner = CallingThreadCpus();
  const std::uint32_t last = runner.ranges().back().last;
  OnOwnThread([&] {
    ASSERT_TRUE(PinCallingThread(One(last)).ok());
    EXPECT_EQ(CallingThreadCpus(), One(last));
    std::this_thread::yield();
    EXPECT_EQ(sched_getcpu(), static_cast<int>(last));
  });
  EXPECT_EQ(CallingThreadCpus(), runner);  // the pin was the other thread's only
}

TEST(ThreadAffinityTest, CpusThatCannotBeUsedAreRefusedByName) {
  OnOwnThread([] {
    const CpuList before = CallingThreadCpus();
    Status too_high = PinCallingThread(One(CpuList::kMaxId));
    ASSERT_FALSE(too_high.ok());
    EXPECT_THAT(too_high.error().message, HasSubstr("cpus 65535"));
    EXPECT_FALSE(PinCallingThread(CpuList()).ok());
    if (!before.Contains(CPU_SETSIZE - 1)) {  // a CPU this machine does not have (or not for us)
      Status absent = PinCallingThread(One(CPU_SETSIZE - 1));
      ASSERT_FALSE(absent.ok());
      EXPECT_THAT(absent.error().message, HasSubstr("cpus " + std::to_string(CPU_SETSIZE - 1)));
      EXPECT_THAT(absent.error().message, HasSubstr("allowed here: " + before.ToString()));
    }
    EXPECT_EQ(CallingThreadCpus(), before);
  });
}

TEST(ThreadAffinityTest, ALongListIsCutInTheMessage) {
  std::vector<CpuRange> every_other;
  for (std::uint32_t cpu = 2000; cpu < 60000; cpu += 2) every_other.push_back({cpu, cpu});
  OnOwnThread([&] {
    Status st = PinCallingThread(CpuList(every_other));
    ASSERT_FALSE(st.ok());
    EXPECT_THAT(st.error().message, HasSubstr("cpus 2000,2002,"));
    EXPECT_THAT(st.error().message, HasSubstr(",... (29000 CPUs)"));
    EXPECT_LT(st.error().message.size(), 300u);
  });
}

TEST(ThreadPinningTest, FollowsTheConfiguredListAndGoesBackWhenItIsRemoved) {
  OnOwnThread([] {
    const CpuList original = CallingThreadCpus();
    const std::uint32_t first = original.ranges().front().first;
    ThreadPinning pinning;
    EXPECT_FALSE(pinning.Apply(CpuList()));  // unpinned to begin with: nothing to do
    ASSERT_TRUE(pinning.Apply(One(first)));
    EXPECT_EQ(pinning.error(), "");
    EXPECT_EQ(CallingThreadCpus(), One(first));
    // Someone else moves the thread; the same list again is not re-applied (one syscall per change).
    ASSERT_TRUE(PinCallingThread(original).ok());
    EXPECT_FALSE(pinning.Apply(One(first)));
    EXPECT_EQ(CallingThreadCpus(), original);
    // An empty list gives the thread back all it started with.
    ASSERT_TRUE(PinCallingThread(One(first)).ok());
    EXPECT_TRUE(pinning.Apply(CpuList()));
    EXPECT_EQ(CallingThreadCpus(), original);
  });
}

TEST(ThreadPinningTest, AListThatFailsSaysWhyAndLeavesTheOriginalCpus) {
  OnOwnThread([] {
    const CpuList original = CallingThreadCpus();
    const std::uint32_t first = original.ranges().front().first;
    ThreadPinning pinning;
    ASSERT_TRUE(pinning.Apply(One(first)));
    EXPECT_TRUE(pinning.Apply(One(CpuList::kMaxId)));
    EXPECT_THAT(pinning.error(), HasSubstr("65535"));
    EXPECT_EQ(CallingThreadCpus(), original);  // not left on the older list
    EXPECT_FALSE(pinning.Apply(One(CpuList::kMaxId)));
    EXPECT_THAT(pinning.error(), HasSubstr("65535"));  // still said while the list stands
    EXPECT_TRUE(pinning.Apply(One(first)));
    EXPECT_EQ(pinning.error(), "");
  });
}

}  // namespace
}  // namespace rdmahd
