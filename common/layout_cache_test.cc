#include "common/layout_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "common/held_files.h"
#include "common/node_fs.h"
#include "tests/support/held_fd_budget.h"
#include "tests/support/test_paths.h"

namespace rdmahd {
namespace {

using Clock = std::chrono::steady_clock;
using testing::ScopedHeldFdBudget;
using testing::TempDir;

// A layout that records which discovery made it.
struct Layout {
  int serial = 0;
  bool fits = true;
  std::optional<HeldFile> file;
  std::size_t HeldDescriptors() const { return CountOpen(file); }
  void CloseDescriptors() { CloseHeld(file); }
};

// Discovers layouts with increasing serials; reads say "gone" for the serials in `gone_serials`.
struct Kernel {
  int discoveries = 0;
  int reads = 0;
  std::vector<int> gone_serials;
  std::optional<std::string> refuse;  // set: discovery fails with this

  auto Discover() {
    return [this]() -> Result<Layout> {
      ++discoveries;
      if (refuse) return Error{*refuse, ENOENT};
      Layout l;
      l.serial = discoveries;
      return l;
    };
  }
  auto Read() {
    return [this](Layout& l) -> std::optional<std::string> {
      ++reads;
      for (int s : gone_serials) {
        if (s == l.serial) return "layout " + std::to_string(s) + " gone";
      }
      return std::nullopt;
    };
  }
};

auto Fits() {
  return [](const Layout& l) { return l.fits; };
}

TEST(LayoutCacheTest, DiscoversOnceAndReusesTheLayout) {
  LayoutCache<Layout> cache;
  Kernel k;
  const Clock::time_point t0{};
  for (int i = 0; i < 3; ++i) {
    LayoutUse<Layout> use = cache.Read("mlx5_0", t0 + std::chrono::hours(i), k.Discover(), Fits(), k.Read());
    ASSERT_NE(use.layout, nullptr);
    EXPECT_EQ(use.layout->serial, 1);
    EXPECT_FALSE(use.gone);
  }
  EXPECT_EQ(k.discoveries, 1);  // no relist interval: age alone never rediscovers
  EXPECT_EQ(k.reads, 3);
}

TEST(LayoutCacheTest, ACachedLayoutThatSaysGoneIsRediscoveredAndReadAgainAtOnce) {
  LayoutCache<Layout> cache;
  Kernel k;
  ASSERT_EQ(cache.Read("d", {}, k.Discover(), Fits(), k.Read()).layout->serial, 1);
  k.gone_serials = {1};  // the device was re-created under its name
  LayoutUse<Layout> use = cache.Read("d", {}, k.Discover(), Fits(), k.Read());
  ASSERT_NE(use.layout, nullptr);
  EXPECT_EQ(use.layout->serial, 2);
  EXPECT_FALSE(use.gone);
  EXPECT_EQ(k.reads, 3);
  EXPECT_EQ(cache.Find("d"), use.layout);
}

TEST(LayoutCacheTest, GoneTwiceReportsTheLastMessageAndKeepsTheLastLayout) {
  LayoutCache<Layout> cache;
  Kernel k;
  k.gone_serials = {1, 2, 3};
  LayoutUse<Layout> use = cache.Read("d", {}, k.Discover(), Fits(), k.Read());
  EXPECT_EQ(k.discoveries, 2);  // one retry, not more
  ASSERT_TRUE(use.gone);
  EXPECT_EQ(*use.gone, "layout 2 gone");
  ASSERT_NE(use.layout, nullptr);
  EXPECT_EQ(use.layout->serial, 2);
  EXPECT_EQ(cache.size(), 1u);
  cache.Erase("d");
  EXPECT_EQ(cache.Find("d"), nullptr);
}

TEST(LayoutCacheTest, CachedOnlyRetryStopsAtAFreshLayoutThatIsGone) {
  LayoutCache<Layout> cache;
  Kernel k;
  k.gone_serials = {1, 2};
  LayoutUse<Layout> use = cache.Read("d", {}, k.Discover(), Fits(), k.Read(), GoneRetry::kCachedOnly);
  EXPECT_EQ(k.discoveries, 1);
  ASSERT_TRUE(use.gone);
  // From the cache, one retry: the fresh layout is read, and it is gone too, so it stops there.
  k.gone_serials = {2, 3};
  cache.Erase("d");
  ASSERT_EQ(cache.Read("d", {}, k.Discover(), Fits(), k.Read(), GoneRetry::kCachedOnly).layout->serial, 2);
  k.gone_serials = {2, 3};
  use = cache.Read("d", {}, k.Discover(), Fits(), k.Read(), GoneRetry::kCachedOnly);
  EXPECT_EQ(k.discoveries, 3);
  ASSERT_TRUE(use.gone);
  EXPECT_EQ(*use.gone, "layout 3 gone");
}

TEST(LayoutCacheTest, FailedDiscoveryCachesNothingAndIsRetriedOnceUnlessCachedOnly) {
  LayoutCache<Layout> cache;
  Kernel k;
  k.refuse = "stat /sys/class/infiniband/d: No such file or directory";
  LayoutUse<Layout> use = cache.Read("d", {}, k.Discover(), Fits(), k.Read());
  EXPECT_EQ(use.layout, nullptr);
  ASSERT_TRUE(use.gone);
  EXPECT_EQ(*use.gone, *k.refuse);
  EXPECT_EQ(k.discoveries, 2);
  EXPECT_EQ(k.reads, 0);
  EXPECT_EQ(cache.size(), 0u);
  use = cache.Read("d", {}, k.Discover(), Fits(), k.Read(), GoneRetry::kCachedOnly);
  EXPECT_EQ(k.discoveries, 3);
  EXPECT_EQ(use.layout, nullptr);
}

TEST(LayoutCacheTest, ALayoutThatNoLongerFitsIsDiscoveredAgainBeforeTheRead) {
  LayoutCache<Layout> cache;
  Kernel k;
  Layout* first = cache.Read("d", {}, k.Discover(), Fits(), k.Read()).layout;
  first->fits = false;  // e.g. a new topology generation
  LayoutUse<Layout> use = cache.Read("d", {}, k.Discover(), Fits(), k.Read());
  EXPECT_EQ(use.layout->serial, 2);
  EXPECT_EQ(k.reads, 2);  // the misfit was not read
}

TEST(LayoutCacheTest, RelistIntervalAndExpireRediscover) {
  LayoutCache<Layout> cache(std::chrono::seconds(30));
  Kernel k;
  const Clock::time_point t0 = Clock::time_point{} + std::chrono::hours(1);
  EXPECT_EQ(cache.Read("n", t0, k.Discover(), Fits(), k.Read()).layout->serial, 1);
  EXPECT_EQ(cache.Read("n", t0 + std::chrono::seconds(29), k.Discover(), Fits(), k.Read()).layout->serial, 1);
  EXPECT_EQ(cache.Read("n", t0 + std::chrono::seconds(30), k.Discover(), Fits(), k.Read()).layout->serial, 2);
  cache.Expire("n");
  EXPECT_EQ(cache.Read("n", t0 + std::chrono::seconds(31), k.Discover(), Fits(), k.Read()).layout->serial, 3);
  EXPECT_EQ(cache.Read("n", t0 + std::chrono::seconds(32), k.Discover(), Fits(), k.Read()).layout->serial, 3);
}

TEST(LayoutCacheTest, AnotherRootDropsEverythingAndRetainDropsWhatLeft) {
  LayoutCache<Layout> cache;
  Kernel k;
  cache.SetRoot("/a/sys");
  for (const char* name : {"a", "b", "c"}) (void)cache.Read(name, {}, k.Discover(), Fits(), k.Read());
  cache.SetRoot("/a/sys");  // the same tree: kept
  EXPECT_EQ(cache.size(), 3u);
  cache.Retain([](const std::string& name, const Layout&) { return name != "b"; });
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.Find("b"), nullptr);
  std::vector<std::string> seen;
  cache.ForEach([&](const std::string& name, const Layout&) { seen.push_back(name); });
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<std::string>{"a", "c"}));
  cache.SetRoot("/b/sys");
  EXPECT_EQ(cache.size(), 0u);
}

TEST(LayoutCacheTest, CountsAndClosesTheLayoutsDescriptorsAndDroppingALayoutClosesThem) {
  ScopedHeldFdBudget budget(100);
  TempDir dir;
  dir.Write("a", "1\n");
  dir.Write("b", "2\n");
  NodeFs fs(dir.path(), "/proc");
  std::string buf;
  const std::size_t held_before = HeldFdBudget::Process().held();
  LayoutCache<Layout> cache;
  int serial = 0;
  for (const char* name : {"a", "b"}) {
    auto discover = [&]() -> Result<Layout> {
      Layout l;
      l.serial = ++serial;
      l.file.emplace(dir.path() + "/" + name);
      return l;
    };
    auto read = [&](Layout& l) -> std::optional<std::string> {
      auto r = l.file->Read(fs, buf);
      if (!r.ok()) return r.error().message;
      return std::nullopt;
    };
    ASSERT_FALSE(cache.Read(name, {}, discover, Fits(), read).gone);
  }
  EXPECT_EQ(cache.HeldDescriptors(), 2u);
  EXPECT_EQ(HeldFdBudget::Process().held(), held_before + 2);
  cache.CloseDescriptors();
  EXPECT_EQ(cache.HeldDescriptors(), 0u);
  EXPECT_EQ(cache.size(), 2u);  // the layouts stay
  EXPECT_EQ(HeldFdBudget::Process().held(), held_before);
  (void)cache.Read("a", {}, [&]() -> Result<Layout> { return Layout{}; }, [](const Layout&) { return false; },
                   [](Layout&) -> std::optional<std::string> { return std::nullopt; });
  EXPECT_EQ(cache.Find("a")->serial, 0);  // replaced: its file with it
}

}  // namespace
}  // namespace rdmahd
