// CPU cost of the netdev collector per scrape on a node whose RDMA netdevs report a real driver's
// ethtool statistics: every netdev named by a bench/gen_tree.py tree gets a /sys/class/net entry
// and answers SIOCETHTOOL with the stats of an `ethtool -S` dump (e.g. mlx5's 751, in
// ../shared/fixtures/real/outputs/ethtool-S/). Only the user-space side is measured: the ioctl is
// answered in process, so a real driver's own cost (building strings, querying firmware) comes on
// top.
//   rdmahd_netdev_bench SYSFS_ROOT ETHTOOL_S_DUMP [SCRAPES]
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "collectors/netdev_collector.h"
#include "collectors/topology_discovery.h"
#include "parsers/ethtool_stats.h"
#include "tests/support/stat_list_driver.h"

namespace {

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s SYSFS_ROOT ETHTOOL_S_DUMP [SCRAPES]\n", argv[0]);
    return 2;
  }
  const std::string root = argv[1];
  const int scrapes = argc > 3 ? std::atoi(argv[3]) : 200;
  std::ifstream dump_file(argv[2]);
  std::stringstream dump;
  dump << dump_file.rdbuf();
  auto parsed = rdmahd::ParseEthtoolStatsText(dump.str());
  if (parsed.stats.empty()) {
    std::fprintf(stderr, "%s: no statistics in %s\n", argv[0], argv[2]);
    return 2;
  }

  // The in-process driver below stands for the kernel this tree describes.
  const rdmahd::NodeFs fs = rdmahd::NodeFs(root, "/nonexistent", "").AskingKernelForTest();
  rdmahd::Config config;
  rdmahd::TopologyDiscovery discovery;
  const rdmahd::Topology topology = discovery.Discover(fs, config);
  for (const auto& l : topology.links) {
    const std::string dir = root + "/class/net/" + l.netdev;
    std::filesystem::create_directories(dir);
    WriteFile(dir + "/mtu", "4200\n");
    WriteFile(dir + "/operstate", "up\n");
    WriteFile(dir + "/speed", "100000\n");
    WriteFile(dir + "/carrier_changes", "2\n");
  }

  // The driver answers with the dump's stats; every scrape moves each value on by one.
  auto stats = std::make_shared<std::vector<rdmahd::DriverStat>>(parsed.stats);
  rdmahd::NetdevCollector collector(std::make_unique<rdmahd::testing::StatListDriver>(stats, rdmahd::PauseParam{}));
  rdmahd::CollectContext ctx{fs, config, topology};
  double cpu = 0;
  std::size_t netdevs = 0, classified = 0;
  for (int i = 0; i <= scrapes; ++i) {
    for (auto& s : *stats) ++s.value;
    rdmahd::Snapshot snapshot;
    rdmahd::CollectorOutcome outcome;
    double t0 = ThreadCpuSeconds();
    (void)collector.Collect(ctx, snapshot, outcome);
    double t1 = ThreadCpuSeconds();
    if (i == 0) continue;  // first collection: discovery
    cpu += t1 - t0;
    const auto* facts = snapshot.Get<rdmahd::RdmaNetdevFacts>();
    netdevs = facts->netdevs.size();
    classified = facts->netdevs.empty() ? 0 : facts->netdevs[0].classified_stats.size();
  }
  std::printf("%zu netdevs x %zu driver stats (%zu classified each): netdev collector %.3f ms CPU per scrape\n",
              netdevs, parsed.stats.size(), classified, cpu / scrapes * 1e3);
  return 0;
}
