#include "collectors/roce_qos.h"

#include <gtest/gtest.h>
#include <linux/ethtool.h>
#include <linux/netlink.h>
#include <net/if.h>
#include <sched.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <thread>

#include <dirent.h>

#include <filesystem>

#include "collectors/netdev_collector.h"
#include "core/check.h"
#include "collectors/rdma_devices.h"
#include "tests/support/stat_list_driver.h"
#include "tests/support/test_paths.h"
#include "tests/support/topology.h"
#include "tests/support/test_trees.h"

namespace rdmahd {
namespace {

std::string Render(const Collector& c, const Snapshot& s) {
  MetricSink sink;
  c.Render(s, sink);
  return sink.Serialize();
}

bool Has(const std::string& text, const std::string& line) { return text.find(line + "\n") != std::string::npos; }

TEST(EcnTest, RealProcfsFixtureNpAndRpDifferOnPriority7) {
  if (!testing::RealFixturesAvailable()) GTEST_SKIP() << "no ../shared/fixtures/real";
  NodeFs fs(testing::RealFixture("sysfs/procfs-fixtures/sys"), testing::RealFixture("sysfs/procfs-fixtures/proc"));
  EcnRoleFacts np = ReadEcnRole(fs, "eth0", "roce_np");
  EcnRoleFacts rp = ReadEcnRole(fs, "eth0", "roce_rp");
  ASSERT_TRUE(np.present);
  ASSERT_TRUE(rp.present);
  const std::array<bool, 8> np_want = {true, true, false, true, true, false, true, true};
  const std::array<bool, 8> rp_want = {true, true, false, true, true, false, true, false};
  for (int p = 0; p < 8; ++p) {
    ASSERT_TRUE(np.enabled[p].has_value()) << p;
    EXPECT_EQ(*np.enabled[p], np_want[p]) << "np prio " << p;
    EXPECT_EQ(*rp.enabled[p], rp_want[p]) << "rp prio " << p;
  }
  EXPECT_EQ(np.parameters.at("cnp_dscp"), 48);
  EXPECT_EQ(np.parameters.at("cnp_802p_prio"), 6);
  EXPECT_EQ(rp.parameters.at("rpg_time_reset"), 300);
  EXPECT_EQ(rp.parameters.at("dce_tcp_g"), 1019);
  // No ecn folder => nothing known.
  EcnRoleFacts none = ReadEcnRole(fs, "nonexistent0", "roce_np");
  EXPECT_FALSE(none.present);
  EXPECT_FALSE(none.enabled[3].has_value());
}

// ---- the pfc-off capture ------------------------------------------------------------------------
NodeFs PfcOffFs() {
  return NodeFs(testing::ProjectFixture("roce/pfc-off/sys"), testing::ProjectFixture("roce/pfc-off/proc"),
                testing::ProjectFixture("roce/pfc-off/dcb"));
}

struct Collected {
  Snapshot snapshot;
  std::string metrics;
  std::vector<std::string> errors;
};

Collected CollectFixture(const Config& config) {
  Collected out;
  NetdevCollector netdev;
  RoceCollector roce;
  NodeFs fs = PfcOffFs();
  Topology topology = testing::DiscoverTopology(fs, config);
  CollectContext ctx{fs, config, topology};
  CollectorOutcome o1, o2;
  EXPECT_TRUE(netdev.Collect(ctx, out.snapshot, o1).ok());
  EXPECT_TRUE(roce.Collect(ctx, out.snapshot, o2).ok());
  out.errors = o1.errors;
  out.errors.insert(out.errors.end(), o2.errors.begin(), o2.errors.end());
  MetricSink sink;
  netdev.Render(out.snapshot, sink);
  roce.Render(out.snapshot, sink);
  out.metrics = sink.Serialize();
  return out;
}

TEST(RoceCollectorsTest, PfcOffCaptureFactsAndGoldenMetrics) {
  Config config;
  config.Section<RocePolicy>().extra_ethtool_stats = {"rx_packets|tx_packets"};
  Collected c = CollectFixture(config);
  EXPECT_TRUE(c.errors.empty()) << c.errors.front();

  const auto* roce = c.snapshot.Get<RoceQosFacts>();
  ASSERT_NE(roce, nullptr);
  const RoceNetdevFacts* f0 = roce->Find("ens1f0np0");
  ASSERT_NE(f0, nullptr);
  ASSERT_TRUE(f0->dcb && f0->dcb->pfc);
  EXPECT_EQ(f0->dcb->pfc->enabled_mask, 0x10);
  EXPECT_EQ(f0->trust, TrustMode::kDscp);
  EXPECT_EQ(f0->ecn_np.enabled[3], true);
  EXPECT_EQ(f0->ecn_rp.enabled[3], false);
  const RoceNetdevFacts* f1 = roce->Find("ens1f1np1");
  ASSERT_NE(f1, nullptr);
  EXPECT_FALSE(f1->ecn_np.present);

  // Absent is not zero: PFC is off on 3, so ens1f0np0 has no priority-3 pause series at all.
  EXPECT_TRUE(Has(c.metrics, R"(rdma_pfc_enabled{netdev="ens1f0np0",priority="3"} 0)")) << c.metrics;
  EXPECT_TRUE(Has(c.metrics, R"(rdma_pfc_enabled{netdev="ens1f0np0",priority="4"} 1)"));
  EXPECT_EQ(c.metrics.find(R"(rdma_pause_frames_total{netdev="ens1f0np0",priority="3")"), std::string::npos);
  EXPECT_TRUE(Has(c.metrics, R"(rdma_pause_duration_seconds_total{netdev="ens1f0np0",priority="4",direction="tx"} 0.076)"));
  EXPECT_TRUE(Has(c.metrics, R"(rdma_pause_frames_total{netdev="ens1f1np1",priority="3",direction="rx"} 0)"));
  EXPECT_TRUE(Has(c.metrics, R"(rdma_global_pause_enabled{netdev="ens1f0np0",direction="rx"} 1)"));
  EXPECT_TRUE(Has(c.metrics, R"(rdma_netdev_info{device="mlx5_1",port="1",netdev="ens1f1np1"} 1)"));
  EXPECT_TRUE(Has(c.metrics, R"(rdma_ecn_enabled{netdev="ens1f0np0",priority="3",role="rp"} 0)"));
  EXPECT_EQ(c.metrics.find(R"(rdma_ecn_enabled{netdev="ens1f1np1")"), std::string::npos);

  const std::string golden_path = testing::ProjectFixture("roce/pfc-off/expected_metrics.prom");
  if (std::getenv("RDMAHD_UPDATE_GOLDEN") != nullptr) std::ofstream(golden_path) << c.metrics;
  auto golden = ReadRegularFile(golden_path, std::size_t{1} << 20);
  ASSERT_TRUE(golden.ok()) << golden.error().message << " (RDMAHD_UPDATE_GOLDEN=1 writes it)";
  EXPECT_EQ(c.metrics, *golden);
}

// The flagship alert in docs/checks.md must only use metric families these collectors expose.
TEST(RoceCollectorsTest, FlagshipPromqlUsesExposedMetrics) {
  auto doc = ReadRegularFile(testing::SourceDir() + "/docs/checks.md", std::size_t{1} << 20);
  ASSERT_TRUE(doc.ok());
  const std::string marker = "<!-- alert: PfcMisconfiguredOnRocePort -->";
  auto at = doc->find(marker);
  ASSERT_NE(at, std::string::npos) << "docs/checks.md lost the alert marker";
  auto open = doc->find("```promql\n", at);
  auto close = doc->find("```", open + 10);
  ASSERT_NE(open, std::string::npos);
  const std::string expr = doc->substr(open + 10, close - open - 10);
  Collected c = CollectFixture(Config{});
  std::set<std::string> names;
  std::regex metric(R"(\brdma_[a-z_]+\b)");
  for (auto it = std::sregex_iterator(expr.begin(), expr.end(), metric); it != std::sregex_iterator(); ++it) {
    names.insert(it->str());
  }
  ASSERT_GE(names.size(), 3u) << expr;
  for (const auto& n : names) {
    EXPECT_NE(c.metrics.find("\n" + n + "{"), std::string::npos) << n << " is not exposed";
  }
}

// ---- live paths with injected kernels -----------------------------------------------------------
class RefusingTransport : public DcbNetlinkTransport {
 public:
  Result<std::vector<std::uint8_t>> Exchange(std::span<const std::uint8_t> request) override {
    // NLMSG_ERROR -EOPNOTSUPP with the request's sequence number: a driver without dcbnl_ops.
    std::vector<std::uint8_t> r(16 + sizeof(nlmsgerr), 0);
    nlmsghdr h{static_cast<std::uint32_t>(r.size()), NLMSG_ERROR, 0, 0, 0};
    std::memcpy(&h.nlmsg_seq, request.data() + 8, 4);
    std::memcpy(r.data(), &h, sizeof(h));
    int err = -EOPNOTSUPP;
    std::memcpy(r.data() + 16, &err, 4);
    return r;
  }
};

TEST(RoceCollectorsTest, DriverWithoutDcbExportsSupportedZeroAndNoPfc) {
  testing::TempDir dir;
  testing::WriteOneRocePort(dir, "veth0");
  RoceCollector collector(std::make_unique<RefusingTransport>());
  NodeFs fs = NodeFs(dir.path(), dir.path()).AskingKernelForTest();  // the fake is its kernel
  Config config;
  config.Section<RocePolicy>().priority = 3;
  Topology topology = testing::DiscoverTopology(fs, config);
  CollectContext ctx{fs, config, topology};
  Snapshot s;
  CollectorOutcome o;
  ASSERT_TRUE(collector.Collect(ctx, s, o).ok());
  EXPECT_TRUE(o.errors.empty());
  std::string text = Render(collector, s);
  EXPECT_TRUE(Has(text, R"(rdma_dcb_supported{netdev="veth0"} 0)")) << text;
  EXPECT_EQ(text.find("rdma_pfc_enabled"), std::string::npos);
  EXPECT_EQ(text.find("rdma_trust_info"), std::string::npos);
}

class CountingTransport : public RefusingTransport {
 public:
  Result<std::vector<std::uint8_t>> Exchange(std::span<const std::uint8_t> request) override {
    ++calls;
    return RefusingTransport::Exchange(request);
  }
  int calls = 0;
};

TEST(RoceCollectorsTest, NetdevMissingFromSysfsIsNotAskedAbout) {
  // The RDMA port names a netdev that /sys/class/net does not show (another network namespace):
  // netlink could not reach it either, so it is not queried, and DCB is unknown with the reason.
  testing::TempDir dir;
  dir.Write("class/infiniband/rxe0/ports/1/link_layer", "Ethernet\n");
  dir.Write("class/infiniband/rxe0/ports/1/gids/0", "fe80:0000:0000:0000:5054:00ff:fe12:3456\n");
  dir.Write("class/infiniband/rxe0/ports/1/gid_attrs/types/0", "RoCE v2\n");
  dir.Write("class/infiniband/rxe0/ports/1/gid_attrs/ndevs/0", "ens9\n");
  auto transport = std::make_unique<CountingTransport>();
  CountingTransport* counting = transport.get();
  RoceCollector collector(std::move(transport));
  NodeFs fs = NodeFs(dir.path(), dir.path()).AskingKernelForTest();  // the fake is its kernel
  Config config;
  Topology topology = testing::DiscoverTopology(fs, config);
  CollectContext ctx{fs, config, topology};
  Snapshot s;
  CollectorOutcome o;
  ASSERT_TRUE(collector.Collect(ctx, s, o).ok());
  EXPECT_EQ(counting->calls, 0);
  const auto* facts = s.Get<RoceQosFacts>();
  ASSERT_NE(facts, nullptr);
  ASSERT_EQ(facts->netdevs.size(), 1u);
  EXPECT_NE(facts->netdevs[0].dcb_note.find("class/net/ens9 (netdev in another network namespace?)"),
            std::string::npos)
      << facts->netdevs[0].dcb_note;
  EXPECT_FALSE(facts->netdevs[0].ecn_np.present);
  ASSERT_EQ(o.errors.size(), 1u);

  // Once the netdev shows up, it is asked.
  dir.Write("class/net/ens9/mtu", "1500\n");
  Snapshot s2;
  CollectorOutcome o2;
  ASSERT_TRUE(collector.Collect(ctx, s2, o2).ok());
  EXPECT_GT(counting->calls, 0);
}

// An ECN file that cannot be read for a reason that does not pass (here: a folder among the files)
// costs that file: the others are read, and it is not opened again on every collection.
TEST(RoceCollectorsTest, AnUnreadableEcnFileIsSkippedAndTheOthersRead) {
  testing::TempDir dir;
  testing::WriteOneRocePort(dir, "ens1");
  dir.Write("class/net/ens1/ecn/roce_rp/enable/3", "1\n");
  dir.Write("class/net/ens1/ecn/roce_rp/enable/4", "0\n");
  dir.MkDir("class/net/ens1/ecn/roce_rp/enable/5");
  dir.Write("class/net/ens1/ecn/roce_rp/rpg_gd", "11\n");
  dir.Write("class/net/ens1/ecn/roce_rp/rpg_min_rate", "-1\n");
  dir.MkDir("class/net/ens1/ecn/roce_rp/some_folder");
  RoceCollector collector(std::make_unique<CountingTransport>());
  NodeFs fs = NodeFs(dir.path(), dir.path()).AskingKernelForTest();
  Config config;
  Topology topology = testing::DiscoverTopology(fs, config);
  CollectContext ctx{fs, config, topology};
  for (int round = 0; round < 2; ++round) {
    const std::uint64_t opens_before = collector.fs_work().opens;
    Snapshot s;
    CollectorOutcome o;
    ASSERT_TRUE(collector.Collect(ctx, s, o).ok());
    const RoceNetdevFacts* f = s.Get<RoceQosFacts>()->Find("ens1");
    ASSERT_NE(f, nullptr);
    EXPECT_TRUE(f->ecn_rp.present);
    EXPECT_EQ(f->ecn_rp.enabled[3], true);
    EXPECT_EQ(f->ecn_rp.enabled[4], false);
    EXPECT_FALSE(f->ecn_rp.enabled[5]);
    EXPECT_FALSE(f->ecn_rp.enabled[0]);
    EXPECT_EQ(f->ecn_rp.parameters.Find("rpg_gd"), 11);
    EXPECT_EQ(f->ecn_rp.parameters.Find("rpg_min_rate"), -1);
    EXPECT_FALSE(f->ecn_rp.parameters.contains("some_folder"));
    EXPECT_FALSE(f->ecn_np.present);
    if (round == 1) {
      EXPECT_EQ(collector.fs_work().opens, opens_before) << "held files, and the folders skipped";
    }
  }
  EXPECT_EQ(collector.held_descriptors(), 4u);  // enable/3, enable/4, rpg_gd, rpg_min_rate
}

// ---- captured trees are never judged with this machine's kernel -----------------------------------
class CountingIoctl : public EthtoolIoctl {
 public:
  Status Call(const std::string&, std::span<std::uint8_t>) override {
    ++calls;
    return Error::FromErrno("SIOCETHTOOL", ENODEV);
  }
  int calls = 0;
};

// Two RoCE ports of a captured node: rxe0 on `live_name`, rxe1 on `other_name`.
void WriteTwoRocePorts(const testing::TempDir& dir, const std::string& live_name, const std::string& other_name) {
  testing::WriteOneRocePort(dir, live_name);
  dir.Write("class/infiniband/rxe1/ports/1/link_layer", "Ethernet\n");
  dir.Write("class/infiniband/rxe1/ports/1/gids/0", "fe80:0000:0000:0000:5054:00ff:fe12:3457\n");
  dir.Write("class/infiniband/rxe1/ports/1/gid_attrs/types/0", "RoCE v2\n");
  dir.Write("class/infiniband/rxe1/ports/1/gid_attrs/ndevs/0", other_name + "\n");
  dir.Write("class/net/" + other_name + "/mtu", "1500\n");
  dir.Write("class/net/" + other_name + "/operstate", "up\n");
}

// The kernel the collectors would ask (here: fakes that count) is never asked about a tree that is
// not the live /sys, with or without --path.dcb: NodeFs::asks_kernel() decides for every collector.
TEST(CapturedTreeTest, NoCollectorAsksTheKernelAboutACapture) {
  testing::TempDir dir, dcb;
  WriteTwoRocePorts(dir, "eth0", "ens1f0np0");
  for (const std::string& dcb_dir : {std::string(), dcb.path()}) {
    SCOPED_TRACE("--path.dcb=" + dcb_dir);
    auto ioctl = std::make_unique<CountingIoctl>();
    auto transport = std::make_unique<CountingTransport>();
    CountingIoctl* ioctl_calls = ioctl.get();
    CountingTransport* netlink_calls = transport.get();
    NetdevCollector netdev(std::move(ioctl));
    RoceCollector roce(std::move(transport));
    NodeFs fs(dir.path(), dir.path(), dcb_dir);
    ASSERT_FALSE(fs.asks_kernel());
    Config config;
    Topology topology = testing::DiscoverTopology(fs, config);
    ASSERT_EQ(topology.Netdevs(), (std::vector<std::string>{"ens1f0np0", "eth0"}));
    CollectContext ctx{fs, config, topology};
    Snapshot s;
    CollectorOutcome o;
    ASSERT_TRUE(netdev.Collect(ctx, s, o).ok());
    ASSERT_TRUE(roce.Collect(ctx, s, o).ok());
    EXPECT_EQ(ioctl_calls->calls, 0);
    EXPECT_EQ(netlink_calls->calls, 0);

    // The same tree standing for the kernel (the test's own fakes): asked.
    NodeFs live = fs.AskingKernelForTest();
    CollectContext live_ctx{live, config, topology};
    ASSERT_TRUE(netdev.Collect(live_ctx, s, o).ok());
    ASSERT_TRUE(roce.Collect(live_ctx, s, o).ok());
    EXPECT_EQ(ioctl_calls->calls > 0, dcb_dir.empty());  // a --path.dcb capture is read instead
    EXPECT_EQ(netlink_calls->calls > 0, dcb_dir.empty());
  }
}

// A captured node whose RoCE netdevs are named like a netdev of this machine ("lo" always exists)
// and like none: without --path.dcb the real SIOCETHTOOL ioctl and DCB netlink would answer for this
// machine's lo ("no pause parameters", "no DCB support") and fail for the other ("SIOCETHTOOL: No
// such device"). Neither shows: pause, driver statistics and DCB are unknown, "not captured", and
// the reason says how to capture them. With --path.dcb (nothing captured in it) they stay unknown.
TEST(CapturedTreeTest, NetdevNamedLikeALiveOneShowsNoneOfThisMachinesState) {
  testing::TempDir dir, dcb;
  WriteTwoRocePorts(dir, "lo", "rdmahd-nx0");
  for (const std::string& dcb_dir : {std::string(), dcb.path()}) {
    SCOPED_TRACE("--path.dcb=" + dcb_dir);
    NetdevCollector netdev;  // the real ioctl
    RoceCollector roce;      // the real DCB netlink
    NodeFs fs(dir.path(), dir.path(), dcb_dir);
    Config config;
    config.Section<RocePolicy>().priority = 3;
    config.Section<RocePolicy>().trust = TrustMode::kDscp;
    Topology topology = testing::DiscoverTopology(fs, config);
    CollectContext ctx{fs, config, topology};
    Snapshot s;
    CollectorOutcome o;
    ASSERT_TRUE(netdev.Collect(ctx, s, o).ok());
    ASSERT_TRUE(roce.Collect(ctx, s, o).ok());
    for (const std::string& e : o.errors) {
      EXPECT_EQ(e.find("SIOCETHTOOL"), std::string::npos) << e;
      EXPECT_EQ(e.find("netlink"), std::string::npos) << e;
    }
    const std::string metrics = Render(netdev, s) + Render(roce, s);
    EXPECT_EQ(metrics.find("rdma_global_pause_enabled{"), std::string::npos) << metrics;
    EXPECT_EQ(metrics.find("rdma_dcb_supported{"), std::string::npos) << metrics;
    for (const std::string name : {"lo", "rdmahd-nx0"}) {
      SCOPED_TRACE(name);
      const NetdevFacts* nd = s.Get<RdmaNetdevFacts>()->Find(name);
      const RoceNetdevFacts* q = s.Get<RoceQosFacts>()->Find(name);
      ASSERT_NE(nd, nullptr);
      ASSERT_NE(q, nullptr);
      EXPECT_FALSE(nd->global_pause.has_value());
      EXPECT_FALSE(nd->stats_read);
      EXPECT_EQ(q->dcb, nullptr);
      EXPECT_NE(nd->global_pause_note.find("not captured"), std::string::npos) << nd->global_pause_note;
      EXPECT_NE(nd->stats_note.find("not captured"), std::string::npos) << nd->stats_note;
      for (const std::string* note : {&nd->global_pause_note, &nd->stats_note, &q->dcb_note}) {
        EXPECT_EQ(note->find("EOPNOTSUPP"), std::string::npos) << *note;
        EXPECT_EQ(note->find("SIOCETHTOOL"), std::string::npos) << *note;
        EXPECT_EQ(note->find("No such device"), std::string::npos) << *note;
      }
      if (dcb_dir.empty()) {
        EXPECT_NE(q->dcb_note.find("not captured"), std::string::npos) << q->dcb_note;
        EXPECT_NE(q->dcb_note.find("dcb -j pfc show dev " + name), std::string::npos) << q->dcb_note;
        EXPECT_NE(nd->stats_note.find("ethtool -S " + name), std::string::npos) << nd->stats_note;
      }
    }
    for (const char* check : {"roce_global_pause", "roce_pause_storm", "roce_pfc_priority", "roce_trust"}) {
      for (const CheckResult& r : RunRegisteredCheck(check, s, config)) {
        EXPECT_EQ(r.verdict, Verdict::kUnknown) << check << " " << r.subject << ": " << r.reason;
        if (dcb_dir.empty()) {
          EXPECT_NE(r.reason.find("unknown: not captured"), std::string::npos) << check << ": " << r.reason;
        }
      }
    }
  }
}

// ---- held layouts on an MLNX_OFED-like tree ------------------------------------------------------
// One dual-port mlx5 device whose ports name eth0/eth1 in their GID tables; each netdev has the
// OFED ECN folders (ecn/roce_np|roce_rp with enable/0..7 and DCQCN parameters) and a `dcb -j`
// capture. The topology stage, then the netdev and roce collectors, as the engine runs them, on a
// clock the test moves.
class OfedTree {
 public:
  OfedTree() {
    for (int p = 1; p <= 2; ++p) AddPort("mlx5_0", p, "eth" + std::to_string(p - 1));
  }
  void AddPort(const std::string& dev, int p, const std::string& netdev) const {
    const std::string port = "sys/class/infiniband/" + dev + "/ports/" + std::to_string(p) + "/";
    dir.Write(port + "link_layer", "Ethernet\n");
    dir.Write(port + "state", "4: ACTIVE\n");
    dir.Write(port + "gids/0", "fe80:0000:0000:0000:ba59:9fff:fe00:1a2b\n");
    dir.Write(port + "gids/1", "0000:0000:0000:0000:0000:0000:0000:0000\n");
    dir.Write(port + "gid_attrs/types/0", "RoCE v2\n");
    dir.Write(port + "gid_attrs/ndevs/0", netdev + "\n");
    const std::string net = "sys/class/net/" + netdev + "/";
    dir.Write(net + "mtu", "4200\n");
    dir.Write(net + "operstate", "up\n");
    dir.Write(net + "speed", "100000\n");
    dir.Write(net + "carrier_changes", "2\n");
    for (int prio = 0; prio < 8; ++prio) {
      dir.Write(net + "ecn/roce_np/enable/" + std::to_string(prio), prio == 3 ? "1\n" : "0\n");
      dir.Write(net + "ecn/roce_rp/enable/" + std::to_string(prio), prio == 3 ? "1\n" : "0\n");
    }
    dir.Write(net + "ecn/roce_np/cnp_dscp", "48\n");
    dir.Write(net + "ecn/roce_np/cnp_802p_prio", "6\n");
    dir.Write(net + "ecn/roce_rp/rpg_time_reset", "300\n");
    dir.Write(net + "ecn/roce_rp/dce_tcp_g", "1019\n");
    dir.Write("dcb/" + netdev + "/pfc.json", R"({"pfc_cap":8,"prio_pfc":[false,false,false,true,false,false,false,false]})");
    dir.Write("dcb/" + netdev + "/app.json", R"({"dscp_prio":[[26,3]]})");
  }
  NodeFs Fs() const { return NodeFs(dir.path() + "/sys", dir.path() + "/proc", dir.path() + "/dcb"); }
  std::string Path(const std::string& rel) const { return dir.path() + "/" + rel; }
  testing::TempDir dir;
};

class HeldLayoutTest : public ::testing::Test {
 protected:
  struct Run {
    Snapshot snapshot;
    std::vector<std::string> errors;
    const RdmaNetdevFacts& netdevs() const { return *snapshot.Get<RdmaNetdevFacts>(); }
    const RoceQosFacts& roce() const { return *snapshot.Get<RoceQosFacts>(); }
  };
  Run Scrape() {
    Run r;
    NodeFs fs = tree.Fs();
    Topology topology = discovery.Discover(fs, config);
    CollectContext ctx{fs, config, topology};
    for (Collector* c : std::initializer_list<Collector*>{&netdev, &roce}) {
      CollectorOutcome o;
      EXPECT_TRUE(c->Collect(ctx, r.snapshot, o).ok());
      r.errors.insert(r.errors.end(), o.errors.begin(), o.errors.end());
    }
    return r;
  }
  FsWork Work() const { return discovery.work() + netdev.fs_work() + roce.fs_work(); }
  static std::size_t OpenDescriptors() {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
    return n;
  }
  void Advance(std::chrono::seconds s) { *clock += s; }

  OfedTree tree;
  Config config;
  std::shared_ptr<std::chrono::steady_clock::time_point> clock =
      std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
  SteadyNow now = [c = clock] { return *c; };
  TopologyDiscovery discovery{now};
  NetdevCollector netdev{std::make_unique<testing::StatListDriver>(
                             std::make_shared<std::vector<DriverStat>>(std::vector<DriverStat>{{"rx_prio3_pause", 1}})),
                         now};
  RoceCollector roce{std::make_unique<RefusingTransport>(), now};
};

// After the first scrape, more scrapes open nothing, list nothing and look nothing up by path: every
// file they read is held (4 attributes per netdev; 8 enables + 2 parameters per ECN role; the two
// capture files). What they read is still current.
TEST_F(HeldLayoutTest, SteadyStateScrapesOpenAndListNothing) {
  Run first = Scrape();
  EXPECT_TRUE(first.errors.empty()) << first.errors.front();
  ASSERT_EQ(first.roce().netdevs.size(), 2u);
  EXPECT_EQ(netdev.held_descriptors(), 2u * 4);
  EXPECT_EQ(roce.held_descriptors(), 2u * (2 * (8 + 2) + 2));
  const FsWork after_first = Work();
  EXPECT_GT(after_first.listings, 0u);
  const std::size_t fds = OpenDescriptors();

  for (int i = 0; i < 5; ++i) {
    Advance(std::chrono::seconds(5));  // 25 s in all: inside the relist interval
    Run r = Scrape();
    EXPECT_TRUE(r.errors.empty()) << r.errors.front();
    EXPECT_EQ(Work(), after_first) << "scrape " << i << " opened, listed or looked up files";
    EXPECT_EQ(OpenDescriptors(), fds);
  }

  // Values follow the files (sysfs rewrites an attribute in place; so does this tree).
  tree.dir.Write("sys/class/net/eth1/ecn/roce_rp/enable/5", "1\n");
  tree.dir.Write("sys/class/net/eth1/ecn/roce_np/cnp_dscp", "26\n");
  tree.dir.Write("sys/class/net/eth1/carrier_changes", "3\n");
  tree.dir.Write("dcb/eth1/pfc.json", R"({"pfc_cap":8,"prio_pfc":[false,false,false,false,true,false,false,false]})");
  Run changed = Scrape();
  EXPECT_EQ(Work(), after_first);
  const RoceNetdevFacts* eth1 = changed.roce().Find("eth1");
  ASSERT_NE(eth1, nullptr);
  EXPECT_EQ(eth1->ecn_rp.enabled[5], true);
  EXPECT_EQ(eth1->ecn_np.parameters.at("cnp_dscp"), 26);
  ASSERT_TRUE(eth1->dcb && eth1->dcb->pfc);
  EXPECT_EQ(eth1->dcb->pfc->enabled_mask, 0x10);
  EXPECT_EQ(changed.netdevs().Find("eth1")->carrier_changes, 3u);
}

// The capture is parsed again whenever its bytes differ from the last parse, in either direction
// (the collector keeps the last text and reuses the buffers it reads into): changed, changed
// back, and an APP table emptied and filled again. While unchanged, every collection's facts share
// the one parsed state.
TEST_F(HeldLayoutTest, CaptureChangesBackAndForthAreEachSeen) {
  const std::string pfc3 = R"({"pfc_cap":8,"prio_pfc":[false,false,false,true,false,false,false,false]})";
  const std::string pfc4 = R"({"pfc_cap":8,"prio_pfc":[false,false,false,false,true,false,false,false]})";
  auto mask = [](const Run& r, const char* name) -> std::optional<std::uint32_t> {
    const RoceNetdevFacts* f = r.roce().Find(name);
    if (f == nullptr || !f->dcb || !f->dcb->pfc) return std::nullopt;
    return f->dcb->pfc->enabled_mask;
  };
  Run first = Scrape();
  EXPECT_EQ(mask(first, "eth0"), 0x08u);
  EXPECT_EQ(Scrape().roce().Find("eth0")->dcb, first.roce().Find("eth0")->dcb);
  tree.dir.Write("dcb/eth0/pfc.json", pfc4);
  Run changed = Scrape();
  EXPECT_EQ(mask(changed, "eth0"), 0x10u);
  EXPECT_NE(changed.roce().Find("eth0")->dcb, first.roce().Find("eth0")->dcb);
  Run unchanged = Scrape();
  EXPECT_EQ(mask(unchanged, "eth0"), 0x10u);  // unchanged: the same facts from the kept parse
  EXPECT_EQ(unchanged.roce().Find("eth0")->dcb, changed.roce().Find("eth0")->dcb);
  tree.dir.Write("dcb/eth0/pfc.json", pfc3);
  Run back = Scrape();
  EXPECT_EQ(mask(back, "eth0"), 0x08u);
  EXPECT_EQ(mask(back, "eth1"), 0x08u);
  EXPECT_EQ(back.roce().Find("eth0")->dscp_priority, (std::map<int, int>{{26, 3}}));
  tree.dir.Write("dcb/eth0/app.json", R"({"dscp_prio":[]})");
  EXPECT_TRUE(Scrape().roce().Find("eth0")->dscp_priority.empty());
  tree.dir.Write("dcb/eth0/app.json", R"({"dscp_prio":[[26,3]]})");
  EXPECT_EQ(Scrape().roce().Find("eth0")->dscp_priority, (std::map<int, int>{{26, 3}}));
}

// Nothing signals a file added beside held ones (sysfs has no inotify): a new DCQCN parameter is
// seen once the folder is listed again, after kNetdevRelistInterval, and not before.
TEST_F(HeldLayoutTest, NewEcnFileIsSeenAfterTheRelistInterval) {
  Scrape();
  tree.dir.Write("sys/class/net/eth0/ecn/roce_rp/rpg_gd", "11\n");
  Advance(kNetdevRelistInterval - std::chrono::seconds(1));
  Run before = Scrape();
  EXPECT_FALSE(before.roce().Find("eth0")->ecn_rp.parameters.contains("rpg_gd"));
  Advance(std::chrono::seconds(1));
  Run after = Scrape();
  EXPECT_EQ(after.roce().Find("eth0")->ecn_rp.parameters.at("rpg_gd"), 11);
  EXPECT_EQ(roce.held_descriptors(), 2u * (2 * (8 + 2) + 2) + 1);
}

// A held read failing with ENOENT/ENODEV (sysfs answers ENODEV once the netdev is unregistered; on
// this tmpfs tree the collectors' descriptors are closed so the re-open says ENOENT) makes the
// collector list the netdev again at once, in the same scrape, not after the interval.
TEST_F(HeldLayoutTest, RemovedEcnFolderAndNetdevAreNoticedAtOnce) {
  Scrape();
  std::filesystem::remove_all(tree.Path("sys/class/net/eth0/ecn"));
  roce.CloseDescriptorsForTest();
  Run no_ecn = Scrape();
  EXPECT_TRUE(no_ecn.errors.empty()) << no_ecn.errors.front();
  EXPECT_FALSE(no_ecn.roce().Find("eth0")->ecn_np.present);
  EXPECT_FALSE(no_ecn.roce().Find("eth0")->ecn_rp.enabled[3].has_value());
  EXPECT_TRUE(no_ecn.roce().Find("eth1")->ecn_rp.enabled[3].value_or(false));

  std::filesystem::remove_all(tree.Path("sys/class/net/eth1"));
  netdev.CloseDescriptorsForTest();
  roce.CloseDescriptorsForTest();
  Run gone = Scrape();
  const NetdevFacts* eth1 = gone.netdevs().Find("eth1");
  ASSERT_NE(eth1, nullptr);
  EXPECT_FALSE(eth1->present);
  EXPECT_FALSE(eth1->mtu.has_value());
  EXPECT_FALSE(gone.roce().Find("eth1")->ecn_np.present);
  ASSERT_FALSE(gone.errors.empty());
  EXPECT_NE(gone.errors.front().find("class/net/eth1 (netdev in another network namespace?)"), std::string::npos)
      << gone.errors.front();
  EXPECT_EQ(netdev.held_descriptors(), 4u);  // eth0's
}

// A new device (the topology stage lists class/infiniband on every scrape) naming a new netdev:
// that netdev's files are found and held in the same scrape, whatever the interval.
TEST_F(HeldLayoutTest, NewDeviceAndNetdevAreSeenAtOnce) {
  Scrape();
  tree.AddPort("mlx5_1", 1, "eth2");
  Run r = Scrape();
  EXPECT_TRUE(r.errors.empty()) << r.errors.front();
  ASSERT_NE(r.roce().Find("eth2"), nullptr);
  EXPECT_EQ(r.roce().Find("eth2")->ecn_np.enabled[3], true);
  EXPECT_EQ(r.netdevs().Find("eth2")->mtu, 4200);
  EXPECT_EQ(roce.held_descriptors(), 3u * (2 * (8 + 2) + 2));
}

// A device leaving the topology takes its netdev with it: the netdev's facts are gone from the
// next scrape and both collectors close its descriptors (what is kept per netdev is dropped by
// looking the name up in the topology's netdev list).
TEST_F(HeldLayoutTest, NetdevLeavingTheTopologyIsDroppedInTheNextScrape) {
  tree.AddPort("mlx5_1", 1, "eth2");
  Run three = Scrape();
  ASSERT_NE(three.roce().Find("eth2"), nullptr);
  EXPECT_EQ(roce.held_descriptors(), 3u * (2 * (8 + 2) + 2));
  EXPECT_EQ(netdev.held_descriptors(), 3u * 4);

  std::filesystem::remove_all(tree.Path("sys/class/infiniband/mlx5_1"));
  Run two = Scrape();
  EXPECT_EQ(two.roce().Find("eth2"), nullptr);
  EXPECT_EQ(two.netdevs().Find("eth2"), nullptr);
  ASSERT_NE(two.roce().Find("eth1"), nullptr);
  EXPECT_EQ(roce.held_descriptors(), 2u * (2 * (8 + 2) + 2));
  EXPECT_EQ(netdev.held_descriptors(), 2u * 4);

  tree.AddPort("mlx5_1", 1, "eth2");  // and back
  Run back = Scrape();
  ASSERT_NE(back.roce().Find("eth2"), nullptr);
  EXPECT_EQ(back.roce().Find("eth2")->ecn_np.enabled[3], true);
  EXPECT_EQ(roce.held_descriptors(), 3u * (2 * (8 + 2) + 2));
}

// ---- the real kernel ------------------------------------------------------------------------------
// A veth pair in a network namespace this test creates (only the test thread enters it). Runs the
// real SIOCETHTOOL and DCB netlink code, and both collectors over a sysfs tree naming the veth as a
// RoCE netdev: stats are read, DCB is unknown (veth has no dcbnl_ops), nothing crashes.
TEST(RoceRealKernelTest, VethInOwnNetnsStatsReadDcbUnknown) {
  std::string skip;
  Result<std::vector<DriverStat>> stats = Error{"not run"};
  Result<std::optional<PauseParam>> pause = Error{"not run"};
  Result<DcbState> dcb = Error{"not run"}, missing = Error{"not run"};
  unsigned peer_index = 0;
  std::string metrics;
  std::vector<CheckResult> verdicts;
  testing::TempDir sys;
  testing::WriteOneRocePort(sys, "rdmahd-v0");

  std::thread t([&] {
    if (::unshare(CLONE_NEWNET) != 0) {
      skip = std::string("unshare(CLONE_NEWNET) not permitted: ") + std::strerror(errno);
      return;
    }
    if (std::system("ip link add rdmahd-v0 type veth peer name rdmahd-v1 >/dev/null 2>&1") != 0) {
      skip = "cannot create a veth pair with `ip link add` (no iproute2 or no veth module)";
      return;
    }
    peer_index = if_nametoindex("rdmahd-v1");
    EthtoolReader ethtool(std::make_unique<SocketEthtoolIoctl>());
    stats = ethtool.ReadStats("rdmahd-v0");
    pause = ethtool.ReadPause("rdmahd-v0");
    DcbNetlinkReader reader(std::make_unique<MnlDcbTransport>());
    dcb = reader.Read("rdmahd-v0");
    missing = reader.Read("rdmahd-nope");

    // The collectors, live (no capture folder), against this namespace's kernel.
    NetdevCollector netdev;
    RoceCollector roce;
    NodeFs fs = NodeFs(sys.path(), sys.path()).AskingKernelForTest();  // this namespace's kernel
    Config config;
    config.Section<RocePolicy>().priority = 3;
    Topology topology = testing::DiscoverTopology(fs, config);
    CollectContext ctx{fs, config, topology};
    Snapshot s;
    CollectorOutcome o;
    (void)netdev.Collect(ctx, s, o);
    (void)roce.Collect(ctx, s, o);
    MetricSink sink;
    netdev.Render(s, sink);
    roce.Render(s, sink);
    metrics = sink.Serialize();
    verdicts = RunRegisteredCheck("roce_pfc_priority", s, config);
  });
  t.join();
  if (!skip.empty()) GTEST_SKIP() << skip;

  ASSERT_TRUE(stats.ok()) << stats.error().message;
  bool found_peer = false;
  for (const auto& s : *stats) {
    if (s.name == "peer_ifindex") {
      found_peer = true;
      EXPECT_EQ(s.value, peer_index);
    }
  }
  EXPECT_TRUE(found_peer) << "veth stats without peer_ifindex (" << stats->size() << " stats)";
  ASSERT_TRUE(pause.ok()) << pause.error().message;

  ASSERT_TRUE(dcb.ok()) << dcb.error().message;
  EXPECT_FALSE(dcb->supported);
  EXPECT_FALSE(dcb->pfc.has_value());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().errno_value, ENODEV) << missing.error().message;

  EXPECT_TRUE(Has(metrics, R"(rdma_dcb_supported{netdev="rdmahd-v0"} 0)")) << metrics;
  EXPECT_EQ(metrics.find("rdma_pfc_enabled"), std::string::npos) << metrics;
  ASSERT_EQ(verdicts.size(), 1u);
  EXPECT_EQ(verdicts[0].verdict, Verdict::kUnknown);
  EXPECT_NE(verdicts[0].reason.find("no DCB support"), std::string::npos) << verdicts[0].reason;
}

}  // namespace
}  // namespace rdmahd
