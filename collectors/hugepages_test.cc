#include "collectors/hugepages.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <map>
#include <sstream>

#include <chrono>
#include <filesystem>
#include <memory>

#include "tests/support/held_fd_budget.h"
#include "tests/support/test_paths.h"

namespace rdmahd {
namespace {

using testing::ProjectFixture;
using testing::RealFixture;
using testing::ScopedHeldFdBudget;
using testing::TempDir;

constexpr std::uint64_t k2M = 2u << 20;
constexpr std::uint64_t k1G = 1u << 30;

HostMemoryFacts Collect(const NodeFs& fs, std::vector<std::string>* errors = nullptr) {
  HugepagesCollector collector;
  Config config;
  Topology topology;
  Snapshot snapshot;
  CollectorOutcome outcome;
  EXPECT_TRUE(collector.Collect(CollectContext{fs, config, topology}, snapshot, outcome).ok());
  if (errors) *errors = outcome.errors;
  const auto* f = snapshot.Get<HostMemoryFacts>();
  return f ? *f : HostMemoryFacts{};
}

std::string Render(const NodeFs& fs) {
  HugepagesCollector collector;
  Config config;
  Topology topology;
  Snapshot snapshot;
  CollectorOutcome outcome;
  EXPECT_TRUE(collector.Collect(CollectContext{fs, config, topology}, snapshot, outcome).ok());
  MetricSink sink;
  collector.Render(snapshot, sink);
  return sink.Serialize();
}

NodeFs HostFixture() {
  return NodeFs(ProjectFixture("host/numa-misplaced/sys"), ProjectFixture("host/numa-misplaced/proc"));
}

TEST(HugepagesCollectorTest, PoolsPerSizeAndNode) {
  std::vector<std::string> errors;
  const HostMemoryFacts f = Collect(HostFixture(), &errors);
  EXPECT_TRUE(errors.empty()) << errors.front();
  ASSERT_EQ(f.hugepage_sizes.size(), 2u);
  EXPECT_EQ(f.hugepage_sizes[0].size_bytes, k2M);  // sorted by size
  EXPECT_EQ(f.hugepage_sizes[1].size_bytes, k1G);
  const HugepageSizeFacts& s = *f.FindSize(k2M);
  EXPECT_EQ(s.system.total, 1024u);
  EXPECT_EQ(s.system.free, 600u);
  EXPECT_EQ(s.system.reserved, 0u);
  EXPECT_EQ(s.system.surplus, 0u);
  ASSERT_EQ(s.nodes.size(), 2u);
  EXPECT_EQ(s.nodes.at(0).free, 512u);
  EXPECT_EQ(s.nodes.at(1).free, 88u);
  EXPECT_FALSE(s.nodes.at(1).reserved);  // per node the kernel has no reservation count
  EXPECT_EQ(f.default_hugepage_size_bytes, k2M);
  EXPECT_EQ(f.hugetlb_bytes, 2u * k1G);
  EXPECT_EQ(f.thp_mode, "madvise");
  EXPECT_EQ(f.numa_balancing, true);
}

TEST(HugepagesCollectorTest, RealCapturesWithoutPoolFolders) {
  // node_exporter's tree: no /sys/kernel/mm/hugepages, per-node meminfo for nodes 0-2.
  const HostMemoryFacts ne = Collect(NodeFs(RealFixture("sysfs/node-exporter-fixtures/sys"),
                                            RealFixture("sysfs/node-exporter-fixtures/proc")));
  EXPECT_EQ(ne.default_hugepage_size_bytes, k2M);
  ASSERT_EQ(ne.hugepage_sizes.size(), 1u);
  EXPECT_EQ(ne.hugepage_sizes[0].nodes.size(), 3u);
  for (const auto& [node, pool] : ne.hugepage_sizes[0].nodes) EXPECT_EQ(pool.total, 0u) << node;
  // The pool folder is missing: the system-wide pool comes from meminfo's HugePages_*.
  EXPECT_EQ(ne.hugepage_sizes[0].system.total, 0u);
  EXPECT_EQ(ne.hugepage_sizes[0].system.reserved, 0u);
  EXPECT_FALSE(ne.hugepages_note.empty());
  EXPECT_FALSE(ne.thp_mode);

  const HostMemoryFacts pf = Collect(NodeFs(RealFixture("sysfs/procfs-fixtures/sys"), RealFixture("sysfs/procfs-fixtures/proc")));
  EXPECT_EQ(pf.default_hugepage_size_bytes, k2M);
  ASSERT_EQ(pf.hugepage_sizes.size(), 1u);
  EXPECT_EQ(pf.hugepage_sizes[0].system.free, 0u);
  EXPECT_TRUE(pf.hugepage_sizes[0].nodes.empty());  // node1/2 have only vmstat
  EXPECT_FALSE(pf.numa_balancing);
}

// Every hugepage value node_exporter's golden output has for its own fixture tree agrees with ours:
// node_memory_HugePages_{Total,Free,Rsvd,Surp} -> rdma_host_hugepages{state}, Hugepagesize, and
// node_memory_numa_HugePages_{Total,Free,Surp}{node} -> rdma_host_node_hugepages{node,state}.
TEST(HugepagesCollectorTest, AgreesWithNodeExporterOnItsFixtureTree) {
  auto expected = ReadRegularFile(RealFixture("expected/node_exporter_e2e_selected.prom"), 1 << 20);
  ASSERT_TRUE(expected.ok()) << expected.error().message;
  const std::string ours = Render(NodeFs(RealFixture("sysfs/node-exporter-fixtures/sys"),
                                         RealFixture("sysfs/node-exporter-fixtures/proc")));
  const std::map<std::string, std::string> state = {{"Total", "total"}, {"Free", "free"}, {"Rsvd", "reserved"}, {"Surp", "surplus"}};
  std::istringstream in(*expected);
  std::string line;
  int compared = 0;
  while (std::getline(in, line)) {
    std::string want;
    if (line.rfind("node_memory_Hugepagesize_bytes ", 0) == 0) {
      want = "rdma_host_hugepage_default_size_bytes 2097152\n";
    } else if (line.rfind("node_memory_HugePages_", 0) == 0) {
      const std::string s = line.substr(22, line.find(' ') - 22);
      want = "rdma_host_hugepages{size_bytes=\"2097152\",state=\"" + state.at(s) + "\"} " + line.substr(line.find(' ') + 1) + "\n";
    } else if (line.rfind("node_memory_numa_HugePages_", 0) == 0) {
      const std::string s = line.substr(27, line.find('{') - 27);
      const std::string node = line.substr(line.find("node=\"") + 6, 1);
      want = "rdma_host_node_hugepages{node=\"" + node + "\",size_bytes=\"2097152\",state=\"" + state.at(s) + "\"} " +
             line.substr(line.find(' ') + 1) + "\n";
    } else {
      continue;
    }
    EXPECT_NE(ours.find(want), std::string::npos) << line << " -> " << want << "in:\n" << ours;
    ++compared;
  }
  EXPECT_EQ(compared, 14);
}

TEST(HugepagesCollectorTest, BadFilesCostOneValue) {
  TempDir dir;
  dir.Write("sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", "12\n");
  dir.Write("sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages", "lots\n");
  dir.MkDir("sys/kernel/mm/hugepages/hugepages-2048kB/surplus_hugepages");  // not a file
  dir.Write("sys/kernel/mm/hugepages/hugepages-2048kB/resv_hugepages", "0\n");
  dir.Write("sys/kernel/mm/hugepages/not-a-pool/nr_hugepages", "3\n");
  dir.Write("sys/kernel/mm/transparent_hugepage/enabled", "garbage\n");
  dir.Write("proc/meminfo", "HugePages_Total: many\n");
  dir.MkDir("proc/sys/kernel");
  // A FIFO where a file should be: refused at once, never a hang.
  ASSERT_EQ(::mkfifo((dir.path() + "/proc/sys/kernel/numa_balancing").c_str(), 0600), 0);
  std::vector<std::string> errors;
  const HostMemoryFacts f = Collect(NodeFs(dir.path() + "/sys", dir.path() + "/proc"), &errors);
  ASSERT_EQ(f.hugepage_sizes.size(), 1u);
  const HugepagePool& p = f.hugepage_sizes[0].system;
  EXPECT_EQ(p.total, 12u);
  EXPECT_FALSE(p.free);
  EXPECT_FALSE(p.surplus);
  EXPECT_EQ(p.reserved, 0u);
  EXPECT_EQ(f.hugepage_sizes[0].notes.size(), 2u);
  EXPECT_FALSE(f.thp_mode);
  EXPECT_NE(f.thp_note.find("no single [selected] mode"), std::string::npos) << f.thp_note;
  EXPECT_NE(f.meminfo_note.find("HugePages_Total"), std::string::npos) << f.meminfo_note;
  EXPECT_FALSE(f.default_hugepage_size_bytes);
  EXPECT_FALSE(f.numa_balancing);
  EXPECT_NE(f.numa_balancing_note.find("numa_balancing"), std::string::npos) << f.numa_balancing_note;
  EXPECT_GE(errors.size(), 4u);  // free, surplus, THP, meminfo
}

TEST(HugepagesCollectorTest, EmptyRootsGiveNotesNotValues) {
  TempDir dir;
  std::vector<std::string> errors;
  const HostMemoryFacts f = Collect(NodeFs(dir.path(), dir.path()), &errors);
  EXPECT_TRUE(f.hugepage_sizes.empty());
  EXPECT_FALSE(f.hugepages_note.empty());
  EXPECT_FALSE(f.numa_balancing);
  EXPECT_TRUE(errors.empty());  // missing files are not errors: kernels without hugetlb or NUMA
  EXPECT_EQ(Render(NodeFs(dir.path(), dir.path())), "");
}

// A tree with one 2 MiB pool, system-wide and on the given nodes, and a collector on a clock the
// test moves.
class HugepageFolders {
 public:
  HugepageFolders() {
    for (const char* f : {"nr_hugepages", "free_hugepages", "resv_hugepages", "surplus_hugepages"}) {
      dir_.Write(std::string("sys/kernel/mm/hugepages/hugepages-2048kB/") + f, "8\n");
    }
  }
  void Node(int n, const std::string& free) {
    const std::string d = NodeDir(n) + "/hugepages/hugepages-2048kB/";
    dir_.Write(d + "nr_hugepages", "4\n");
    dir_.Write(d + "free_hugepages", free + "\n");
    dir_.Write(d + "surplus_hugepages", "0\n");
  }
  void RemoveNode(int n) { std::filesystem::remove_all(dir_.path() + "/" + NodeDir(n)); }
  void Advance(std::chrono::seconds s) { *clock_ += s; }
  // node -> free 2 MiB pages on it (nullopt: listed, but its count unreadable)
  std::map<int, std::optional<std::uint64_t>> FreeByNode(std::vector<std::string>* errors = nullptr) {
    Config config;
    Topology topology;
    Snapshot snapshot;
    CollectorOutcome outcome;
    const NodeFs fs(dir_.path() + "/sys", dir_.path() + "/proc");
    EXPECT_TRUE(collector_.Collect(CollectContext{fs, config, topology}, snapshot, outcome).ok());
    if (errors) *errors = outcome.errors;
    std::map<int, std::optional<std::uint64_t>> out;
    const auto* f = snapshot.Get<HostMemoryFacts>();
    const HugepageSizeFacts* s = f ? f->FindSize(k2M) : nullptr;
    if (s == nullptr) return out;
    for (const auto& [node, pool] : s->nodes) out[node] = pool.free;
    return out;
  }

 private:
  static std::string NodeDir(int n) { return "sys/devices/system/node/node" + std::to_string(n); }
  TempDir dir_;
  std::shared_ptr<std::chrono::steady_clock::time_point> clock_ =
      std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
  HugepagesCollector collector_{[clock = clock_] { return *clock; }};
};

using FreeByNode = std::map<int, std::optional<std::uint64_t>>;

// A steady-state collection lists no folder but re-reads the counts; a node added beside the
// listed ones is seen once kNetdevRelistInterval has passed.
TEST(HugepagesCollectorTest, FoldersAreListedAgainOnlyAfterTheInterval) {
  HugepageFolders tree;
  tree.Node(0, "4");
  EXPECT_EQ(tree.FreeByNode(), (FreeByNode{{0, 4}}));
  tree.Node(0, "3");
  tree.Node(1, "2");  // nothing signals a new folder in sysfs
  tree.Advance(kNetdevRelistInterval - std::chrono::seconds(1));
  EXPECT_EQ(tree.FreeByNode(), (FreeByNode{{0, 3}}));
  tree.Advance(std::chrono::seconds(1));
  EXPECT_EQ(tree.FreeByNode(), (FreeByNode{{0, 3}, {1, 2}}));
}

// A node folder that went away (memory hot-unplug) while its files were not held (past the
// descriptor budget every read opens the file): the collection that fails to read it has no
// value for it, and the next one lists the folders again instead of waiting for the interval.
TEST(HugepagesCollectorTest, ANodeFolderThatWentAwayIsListedAgainAtOnce) {
  ScopedHeldFdBudget nothing_held(0);
  HugepageFolders tree;
  tree.Node(0, "4");
  tree.Node(1, "2");
  EXPECT_EQ(tree.FreeByNode(), (FreeByNode{{0, 4}, {1, 2}}));
  tree.RemoveNode(1);
  EXPECT_EQ(tree.FreeByNode(), (FreeByNode{{0, 4}, {1, std::nullopt}}));
  std::vector<std::string> errors;
  EXPECT_EQ(tree.FreeByNode(&errors), (FreeByNode{{0, 4}}));
  EXPECT_TRUE(errors.empty()) << errors.front();
}

TEST(HugepagesCollectorTest, Metrics) {
  const std::string text = Render(HostFixture());
  for (const char* line : {
           "rdma_host_hugepages{size_bytes=\"2097152\",state=\"free\"} 600\n",
           "rdma_host_hugepages{size_bytes=\"1073741824\",state=\"total\"} 0\n",
           "rdma_host_node_hugepages{node=\"1\",size_bytes=\"2097152\",state=\"free\"} 88\n",
           "rdma_host_hugepage_default_size_bytes 2097152\n",
           "rdma_host_hugetlb_bytes 2147483648\n",
           "rdma_host_transparent_hugepages_info{mode=\"madvise\"} 1\n",
           "rdma_host_numa_balancing_enabled 1\n",
       }) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\nin:\n" << text;
  }
  EXPECT_EQ(text.find("rdma_host_node_hugepages{node=\"1\",size_bytes=\"2097152\",state=\"reserved\"}"), std::string::npos);
}

}  // namespace
}  // namespace rdmahd
