#include "probes/peer_targets.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <optional>
#include <thread>

#include "common/net_address.h"
#include "tests/support/test_paths.h"

namespace rdmahd {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::AllOf;
using ::testing::StartsWith;

TEST(TargetsFileParseTest, YamlGroupsWithLabels) {
  auto r = ParseTargetsFile(
      "- targets: [10.0.0.2, node-b.example]\n"
      "  labels: {rack: r12, az: a}\n"
      "- targets: [10.0.0.9]\n",
      "peers.yaml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].name, "10.0.0.2");
  EXPECT_EQ((*r)[0].labels, (PeerLabels{{"az", "a"}, {"rack", "r12"}}));  // sorted by name
  EXPECT_EQ((*r)[1].name, "node-b.example");
  EXPECT_EQ((*r)[2].labels, PeerLabels{});
}

TEST(TargetsFileParseTest, JsonAsPrometheusFileSdWritesIt) {
  auto r = ParseTargetsFile(R"([{"targets": ["10.0.0.2"], "labels": {"rack": "r1"}}, {"targets": []}])", "p.json");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].labels, (PeerLabels{{"rack", "r1"}}));
  auto empty = ParseTargetsFile("", "p.json");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(TargetsFileParseTest, ErrorsNameFileLineAndColumn) {
  EXPECT_EQ(ParseTargetsFile("- targets: [10.0.0.2, \"a b\"]\n", "p.yaml").error().message,
            "p.yaml:1:23: \"a b\" is not a host name (only letters, digits, '-', '_' and '.')");
  EXPECT_THAT(ParseTargetsFile("- targets: [10.0.0.2]\n- targets: [10.0.0.2]\n", "p.yaml").error().message,
              AllOf(StartsWith("p.yaml:2:13:"), HasSubstr("listed twice (first at line 1)")));
  EXPECT_THAT(ParseTargetsFile("- targets: [10.0.0.2]\n  labels: {peer: x}\n", "p.yaml").error().message,
              AllOf(StartsWith("p.yaml:2:12:"), HasSubstr("reserved")));
  EXPECT_THAT(ParseTargetsFile("- targets: [10.0.0.2]\n  labels: {9rack: x}\n", "p.yaml").error().message,
              HasSubstr("label names must match"));
  EXPECT_THAT(ParseTargetsFile("- targets: [10.0.0.2]\n  tragets: []\n", "p.yaml").error().message,
              AllOf(StartsWith("p.yaml:2:3:"), HasSubstr("unknown key \"tragets\"")));
  EXPECT_THAT(ParseTargetsFile("- targets: [10.0.0.2\n", "p.yaml").error().message, StartsWith("p.yaml:"));
  EXPECT_THAT(ParseTargetsFile("targets: [10.0.0.2]\n", "p.yaml").error().message, HasSubstr("must be a list of groups"));
  EXPECT_THAT(ParseTargetsFile("- labels: {a: b}\n", "p.yaml").error().message, HasSubstr("a group needs targets"));
}

// A targets file quotes at most a short escaped excerpt of what it holds, and
// nothing of a key that is not a name.
TEST(TargetsFileParseTest, ErrorsShowOnlyShortExcerpts) {
  const std::string hash = "Hq2v8ZgMmS3cr3tH4shV4lue";
  const std::string key = ParseTargetsFile("- targets: [10.0.0.2]\n  root:$y$j9T$" + hash + ":19000::\n",
                                           "p.yaml").error().message;
  EXPECT_THAT(key, StartsWith("p.yaml:2:3: unknown key (a key of "));
  EXPECT_THAT(key, Not(HasSubstr(hash)));
  EXPECT_THAT(key, Not(HasSubstr("root")));
  const std::string target = ParseTargetsFile("- targets: [\"" + std::string(3000, 'h') + " x\"]\n", "p.yaml")
                                 .error()
                                 .message;
  EXPECT_EQ(target, "p.yaml:1:13: \"" + std::string(40, 'h') + "...\" (3002 bytes) is not a host name (1 to 253 characters)");
  const std::string control = ParseTargetsFile("- targets: [\"a\\eb\"]\n", "p.yaml").error().message;
  EXPECT_EQ(control, "p.yaml:1:13: \"a\\x1bb\" is not a host name (only letters, digits, '-', '_' and '.')");
  EXPECT_EQ(ParseTargetsFile("-\ttargets: [10.0.0.2]\n-   targets: [10.0.0.3]\n\tlabels: {}\n", "p.yaml")
                .error()
                .message,
            "p.yaml:3:1: a tab in the indentation: YAML indents with spaces only");
}

// Found by fuzz/targets_file_fuzz.cc: yaml-cpp's LoadAll looped forever on this text; the guarded
// reader the config loader uses refuses it at once.
TEST(TargetsFileParseTest, TextYamlCppLoopsOnIsRefusedAtOnce) {
  const std::string text = "[y\"ta%rgets\xe1\xc5\xdf\xa4\"10.(.0fd01\"], \"labels\":- ta {/";
  const auto start = std::chrono::steady_clock::now();
  auto r = ParseTargetsFile(text, "p.yaml");
  EXPECT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, StartsWith("p.yaml:"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_THAT(ParseTargetsFile("- targets: [10.0.0.2]\n---\n- targets: [10.0.0.3]\n", "p.yaml").error().message,
              HasSubstr("a second YAML document"));
}

TEST(TargetsFileParseTest, MergeKeepsOneEntryPerNameWithTheFilesLabels) {
  auto merged = MergeTargets({"10.0.0.3", "10.0.0.1"}, {{"10.0.0.3", {{"rack", "r1"}}}, {"10.0.0.2", {}}});
  ASSERT_EQ(merged.size(), 3u);
  EXPECT_EQ(merged[0].name, "10.0.0.1");
  EXPECT_EQ(merged[1].name, "10.0.0.2");
  EXPECT_EQ(merged[2].name, "10.0.0.3");
  EXPECT_EQ(merged[2].labels, (PeerLabels{{"rack", "r1"}}));
}

TEST(TargetsFileTest, ReReadOnlyOnChangeAndABadFileKeepsTheLastGoodList) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/peers.yaml";
  TargetsFile file;
  EXPECT_FALSE(file.Refresh(path));  // missing: an error, an empty list
  EXPECT_THAT(file.error(), HasSubstr("peers.yaml"));
  dir.Write("peers.yaml", "- targets: [10.0.0.2]\n");
  EXPECT_TRUE(file.Refresh(path));
  EXPECT_EQ(file.error(), "");
  ASSERT_EQ(file.targets().size(), 1u);
  EXPECT_FALSE(file.Refresh(path));  // unchanged
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  dir.Write("peers.yaml", "- targets: [10.0.0.2, 10.0.0.3]\n  labels: {rack: [x]}\n");
  EXPECT_FALSE(file.Refresh(path));
  EXPECT_THAT(file.error(), AllOf(HasSubstr("peers.yaml:2:"), HasSubstr("keeping the last good list of 1 peers")));
  EXPECT_EQ(file.targets().size(), 1u);
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  dir.Write("peers.yaml", "- targets: [10.0.0.2, 10.0.0.3]\n");
  EXPECT_TRUE(file.Refresh(path));
  EXPECT_EQ(file.targets().size(), 2u);
  EXPECT_EQ(file.error(), "");
}

// An orchestrator rewriting the same list (a new mtime or inode, the same bytes) costs a read and
// a hash, not a parse; the outcome is the last parse's, error included.
TEST(TargetsFileTest, TheSameBytesWrittenAgainAreNotParsedAgain) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/peers.yaml";
  const std::string good = "- targets: [10.0.0.2, 10.0.0.3]\n";
  dir.Write("peers.yaml", good);
  TargetsFile file;
  EXPECT_TRUE(file.Refresh(path));
  EXPECT_EQ(file.reads(), 1u);
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // a new mtime
    dir.Write("peers.yaml", good);
    EXPECT_FALSE(file.Refresh(path));
  }
  EXPECT_EQ(file.reads(), 1u);
  EXPECT_EQ(file.error(), "");
  EXPECT_EQ(file.targets().size(), 2u);

  // The same bad bytes twice: parsed once, the error kept.
  const std::string bad = "- targets: [10.0.0.2\n";
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  dir.Write("peers.yaml", bad);
  EXPECT_FALSE(file.Refresh(path));
  const std::string error = file.error();
  EXPECT_THAT(error, HasSubstr("keeping the last good list of 2 peers"));
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  dir.Write("peers.yaml", bad);
  EXPECT_FALSE(file.Refresh(path));
  EXPECT_EQ(file.error(), error);
  EXPECT_EQ(file.reads(), 2u);

  // Gone, then back with the bytes last parsed: the error is the missing file's, then none.
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  dir.Write("peers.yaml", good);
  EXPECT_FALSE(file.Refresh(path));  // the same list as before the bad version
  EXPECT_EQ(file.error(), "");
  ASSERT_EQ(std::remove(path.c_str()), 0);
  EXPECT_FALSE(file.Refresh(path));
  EXPECT_THAT(file.error(), HasSubstr("No such file"));
  dir.Write("peers.yaml", good);
  EXPECT_FALSE(file.Refresh(path));
  EXPECT_EQ(file.error(), "");
  EXPECT_EQ(file.reads(), 3u);
}

TEST(SystemResolverTest, LiteralsPassThroughAndLocalhostResolvesFromHostsFile) {
  auto resolver = MakeSystemResolver();
  auto literal = resolver->Resolve("fd00::7", std::chrono::milliseconds(100));
  ASSERT_TRUE(literal.ok());
  EXPECT_EQ(*literal, "fd00::7");
  // "localhost" comes from /etc/hosts (nsswitch "files"): no DNS server is asked.
  auto local = resolver->Resolve("localhost", std::chrono::milliseconds(2000));
  ASSERT_TRUE(local.ok()) << local.error().message;
  EXPECT_TRUE(*local == "127.0.0.1" || *local == "::1") << *local;
  EXPECT_TRUE(IsIpLiteral(*local));
}

// A DNS server that never answers: each lookup costs its timeout, at most kMaxAbandonedLookups
// threads stay behind, and once they end lookups work again.
TEST(SystemResolverTest, AHangingLookupCostsItsTimeoutAndABoundedNumberOfThreads) {
  struct Gate {
    std::mutex mu;
    std::condition_variable cv;
    bool open = false;
    int entered = 0;
  };
  auto gate = std::make_shared<Gate>();
  auto resolver = MakeSystemResolver([gate](const std::string& name) -> Result<std::string> {
    std::unique_lock lock(gate->mu);
    ++gate->entered;
    gate->cv.wait(lock, [&] { return gate->open; });
    return name == "later.example" ? Result<std::string>(std::string("192.0.2.1")) : Error{name + ": late"};
  });
  for (std::size_t i = 0; i < kMaxAbandonedLookups; ++i) {
    const auto start = std::chrono::steady_clock::now();
    auto r = resolver->Resolve("stuck.example", std::chrono::milliseconds(20));
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().message, HasSubstr("no answer within 20ms"));
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  }
  const auto start = std::chrono::steady_clock::now();
  auto refused = resolver->Resolve("one-more.example", std::chrono::milliseconds(2000));
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message, HasSubstr("8 earlier lookups are still running"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));  // at once
  {
    std::lock_guard lock(gate->mu);
    EXPECT_EQ(gate->entered, static_cast<int>(kMaxAbandonedLookups));  // the refused one started none
    gate->open = true;
  }
  gate->cv.notify_all();
  // The stuck lookups end and free their slots.
  std::optional<Result<std::string>> later;
  for (int i = 0; i < 200 && !(later && later->ok()); ++i) {
    later.emplace(resolver->Resolve("later.example", std::chrono::milliseconds(1000)));
    if (!later->ok()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(later && later->ok()) << later->error().message;
  EXPECT_EQ(**later, "192.0.2.1");
}

}  // namespace
}  // namespace rdmahd
