#include "collectors/rdma_devices.h"
#include "parsers/ib_sysfs_parse.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "collectors/topology_discovery.h"
#include "core/check.h"
#include "tests/support/held_fd_budget.h"
#include "tests/support/test_files.h"
#include "tests/support/test_paths.h"

namespace rdmahd {
namespace {

using testing::ProjectFixture;
using testing::RealFixture;
using testing::ScopedHeldFdBudget;
using testing::TempDir;

// The devices collector as the engine runs it: after the topology stage, which is kept across
// collections like the collector (its GID window and the held files the collector reads).
struct Devices {
  TopologyDiscovery topology;
  RdmaDevicesCollector collector;

  Devices() = default;
  // Read backoff timed by `now`; hw_counters from the files.
  explicit Devices(SteadyNow now) : collector(nullptr, std::move(now)) {}
  std::size_t held_descriptors() const { return topology.held_descriptors(); }
};

struct CollectRun {
  Status status;
  RdmaDevicesFacts facts;
  Topology topology;
  CollectorOutcome outcome;
  Snapshot snapshot;  // topology and facts, as checks see them
  std::string text;   // rendered exposition

  // The Topology's port `port` (1-based) of device number `device` (in name order).
  const TopologyPort& Port(std::size_t device, std::size_t port_index) const {
    return topology.devices.at(device).ports.at(port_index);
  }
};

CollectRun CollectFrom(Devices& c, const NodeFs& fs, const Config& config = Config{}) {
  CollectRun run;
  run.topology = c.topology.Discover(fs, config);
  CollectContext ctx{fs, config, run.topology};
  run.snapshot.Put(run.topology);
  Snapshot own;
  run.status = c.collector.Collect(ctx, own, run.outcome);
  run.snapshot.Merge(own);
  if (const auto* f = own.Get<RdmaDevicesFacts>()) run.facts = *f;
  MetricSink sink;
  c.collector.Render(run.snapshot, sink);
  run.text = sink.Serialize();
  return run;
}

CollectRun Collect(Devices& c, const std::string& sysfs_root, const Config& config = Config{}) {
  return CollectFrom(c, NodeFs(sysfs_root, "/nonexistent-proc"), config);
}

// The file system as a kernel answers it: reads of paths containing a failing needle fail with its
// errno, and every read is counted by path.
class CountingFaults : public FsFaults {
 public:
  int BeforeRead(const std::string& path) override {
    ++reads[path];
    for (const auto& [needle, err] : failing) {
      if (path.find(needle) != std::string::npos) return err;
    }
    return 0;
  }
  int ReadsOf(std::string_view needle) const {
    int n = 0;
    for (const auto& [path, count] : reads) n += path.find(needle) != std::string::npos ? count : 0;
    return n;
  }

  std::map<std::string, int> reads;
  std::vector<std::pair<std::string, int>> failing;
};

// A clock the test moves.
struct FakeClock {
  std::chrono::steady_clock::time_point t = std::chrono::steady_clock::time_point{} + std::chrono::hours(100);
  SteadyNow Now() {
    return [this] { return t; };
  }
};

const RdmaDeviceFacts* Device(const RdmaDevicesFacts& f, const std::string& name) {
  for (const auto& d : f.devices) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

bool Contains(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

// Rewrites a file in place (same inode), as the kernel regenerates an attribute.
void Overwrite(const std::string& path, const std::string& content) {
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr) << path;
  std::fputs(content.c_str(), f);
  std::fclose(f);
}

// A minimal RoCE device: class/infiniband/<name> -> ../../devices/virtual/infiniband/<name>.
void MakeDevice(const TempDir& dir, const std::string& name, const std::string& fw = "1.0.0") {
  const std::string d = "devices/virtual/infiniband/" + name;
  dir.Symlink("../../" + d, "class/infiniband/" + name);
  dir.Write(d + "/fw_ver", fw + "\n");
  dir.Write(d + "/ports/1/state", "4: ACTIVE\n");
  dir.Write(d + "/ports/1/phys_state", "5: LinkUp\n");
  dir.Write(d + "/ports/1/rate", "10 Gb/sec (1X QDR)\n");
  dir.Write(d + "/ports/1/link_layer", "Ethernet\n");
  dir.Write(d + "/ports/1/hw_counters/sent_pkts", "0\n");
  dir.Write(d + "/ports/1/hw_counters/rcvd_pkts", "0\n");
}

std::string GidPath(const TempDir& dir, const std::string& dev, int i) {
  return dir.path() + "/devices/virtual/infiniband/" + dev + "/ports/1/gids/" + std::to_string(i);
}

TEST(RdmaDevicesTest, ProjectRoceFixtureFacts) {
  Devices c;
  CollectRun r = Collect(c, ProjectFixture("sysfs/mlx5-roce/sys"));
  ASSERT_TRUE(r.status.ok());
  EXPECT_TRUE(r.outcome.errors.empty()) << r.outcome.errors.front();
  EXPECT_TRUE(r.topology.class_dir_present);
  ASSERT_EQ(r.facts.devices.size(), 2u);

  const RdmaDeviceFacts& d0 = r.facts.devices[0];
  EXPECT_EQ(d0.name, "mlx5_0");
  EXPECT_EQ(d0.fw_ver, "22.36.1010");
  EXPECT_EQ(d0.hca_type, "MT4125");
  EXPECT_EQ(d0.node_type, "1: CA");
  EXPECT_EQ(r.topology.devices[0].pci_address, "0000:3b:00.0");
  EXPECT_EQ(r.topology.devices[0].numa_node, 0);
  EXPECT_EQ(r.topology.devices[1].numa_node, 1);
  ASSERT_EQ(d0.ports.size(), 1u);
  const RdmaPortFacts& p = d0.ports[0];
  const TopologyPort& t = r.Port(0, 0);
  EXPECT_EQ(p.Subject(), "mlx5_0/1");
  EXPECT_TRUE(t.IsEthernet());
  EXPECT_EQ(p.state, (SysfsEnumValue{4, "ACTIVE"}));
  EXPECT_EQ(p.rate_bytes_per_second, 12'500'000'000u);
  EXPECT_EQ(t.netdev, "ens1f0np0");
  EXPECT_EQ(t.roce_v2_gid_count, 2u);
  ASSERT_EQ(t.gids.size(), 4u);  // the 12 zero slots are not facts
  EXPECT_EQ(t.gids[3].index, 3u);
  EXPECT_EQ(t.gids[3].type, "RoCE v2");
  EXPECT_EQ(FormatGid(t.gids[3].gid), "0000:0000:0000:0000:0000:ffff:c0a8:010a");
  EXPECT_EQ(p.counters.at("port_rcv_data"), 3'750'000'000u);
  EXPECT_EQ(p.hw_counters.size(), 30u);
  EXPECT_EQ(p.hw_counters.at("np_cnp_sent"), 3600u);

  // mlx5_1 has a hole in its GID table (slot 5 empty, 6 in use).
  const TopologyPort& p1 = r.Port(1, 0);
  EXPECT_EQ(p1.roce_v2_gid_count, 3u);
  EXPECT_EQ(p1.gids.back().index, 6u);

  EXPECT_TRUE(Contains(r.text, "rdma_devices_found 2"));
  EXPECT_TRUE(Contains(r.text, "rdma_port_info{device=\"mlx5_1\",port=\"1\",link_layer=\"Ethernet\",netdev=\"ens2f0np0\"} 1"));
  EXPECT_TRUE(Contains(r.text, "rdma_port_data_received_bytes_total{device=\"mlx5_0\",port=\"1\"} 15000000000"));
  EXPECT_TRUE(Contains(r.text, "rdma_port_hw_counters_total{device=\"mlx5_1\",port=\"1\",counter=\"out_of_buffer\"} 17"));
}

// SOURCES.md §4 quirks, each read from the real capture in place.
// One port fact: what the Topology discovered about a port (link layer, netdev, GIDs) travels with
// its state, rate and counters, so no consumer joins the two again.
TEST(RdmaDevicesTest, EachPortFactHoldsItsTopologyPart) {
  Devices c;
  for (int scrape = 0; scrape < 2; ++scrape) {  // the discovering collection, then a cached one
    CollectRun r = Collect(c, ProjectFixture("sysfs/mlx5-roce/sys"));
    ASSERT_EQ(r.facts.devices.size(), r.topology.devices.size());
    for (std::size_t d = 0; d < r.facts.devices.size(); ++d) {
      const RdmaDeviceFacts& dev = r.facts.devices[d];
      ASSERT_EQ(dev.ports.size(), r.topology.devices[d].ports.size());
      for (std::size_t i = 0; i < dev.ports.size(); ++i) {
        const RdmaPortFacts& p = dev.ports[i];
        const TopologyPort& t = r.Port(d, i);
        EXPECT_EQ(p.port, t.port);
        EXPECT_EQ(p.link_layer, t.link_layer);
        EXPECT_EQ(p.netdev, t.netdev);
        EXPECT_EQ(p.roce_v2_gid_count, t.roce_v2_gid_count);
        ASSERT_EQ(p.gids.size(), t.gids.size());
        for (std::size_t g = 0; g < p.gids.size(); ++g) EXPECT_EQ(p.gids[g].gid, t.gids[g].gid);
      }
    }
    const RdmaPortFacts& p0 = r.facts.devices.at(0).ports.at(0);
    EXPECT_TRUE(p0.IsEthernet());
    EXPECT_EQ(p0.netdev, "ens1f0np0");
    EXPECT_EQ(p0.state, (SysfsEnumValue{4, "ACTIVE"}));
  }
}

TEST(RdmaDevicesTest, ProcfsCaptureQuirks) {
  Devices c;
  CollectRun r = Collect(c, RealFixture("sysfs/procfs-fixtures/sys"));
  ASSERT_TRUE(r.status.ok());
  EXPECT_TRUE(r.outcome.errors.empty());
  ASSERT_EQ(r.facts.devices.size(), 3u);

  const RdmaDeviceFacts* mlx5 = Device(r.facts, "mlx5_0");
  ASSERT_NE(mlx5, nullptr);
  EXPECT_EQ(mlx5->node_guid, "0a7f:bc12:45ef:d23b");  // file has no trailing newline
  EXPECT_EQ(mlx5->ports[0].phys_state, (SysfsEnumValue{4, "ACTIVE"}));  // not the usual LinkUp
  EXPECT_EQ(mlx5->ports[0].rate_bytes_per_second, 3'125'000'000u);      // "25 Gb/sec (1X EDR)"
  EXPECT_FALSE(r.topology.FindDevice("mlx5_0")->pci_address);          // no device/ link captured

  const RdmaDeviceFacts* mlx4 = Device(r.facts, "mlx4_0");
  ASSERT_NE(mlx4, nullptr);
  const TopologyDevice* mlx4_topology = r.topology.FindDevice("mlx4_0");
  ASSERT_NE(mlx4_topology, nullptr);
  EXPECT_EQ(mlx4_topology->ports[1].link_layer, "InfiniBand");  // "InfiniBand\n\n"
  EXPECT_EQ(mlx4_topology->ports[1].netdev, "");
  EXPECT_FALSE(mlx4_topology->ports[1].roce_v2_gid_count);  // no gids/ in the capture: unknown, not 0

  const RdmaDeviceFacts* hfi1 = Device(r.facts, "hfi1_0");
  ASSERT_NE(hfi1, nullptr);
  EXPECT_FALSE(hfi1->hca_type);  // no hca_type file
  EXPECT_EQ(hfi1->fw_ver, "1.27.0");
  EXPECT_EQ(hfi1->ports[0].rate_bytes_per_second, 12'500'000'000u);
  EXPECT_TRUE(Contains(r.text, "hca_type=\"\""));
}

TEST(RdmaDevicesTest, NodeExporterCaptureQuirks) {
  Devices c;
  CollectRun r = Collect(c, RealFixture("sysfs/node-exporter-fixtures/sys"));
  ASSERT_TRUE(r.status.ok());
  // "N/A (no PMA)" is the driver saying the value does not exist: absent, and not an error.
  EXPECT_TRUE(r.outcome.errors.empty());
  const RdmaDeviceFacts* i40iw = Device(r.facts, "i40iw0");
  ASSERT_NE(i40iw, nullptr);
  EXPECT_TRUE(i40iw->ports[0].counters.empty());
  EXPECT_EQ(i40iw->ports[0].rate_bytes_per_second, 1'250'000'000u);  // "10 Gb/sec (4X)"
  EXPECT_FALSE(Contains(r.text, "rdma_port_data_received_bytes_total{device=\"i40iw0\""));

  const RdmaDeviceFacts* mlx4 = Device(r.facts, "mlx4_0");
  ASSERT_NE(mlx4, nullptr);
  EXPECT_EQ(mlx4->ports[0].counters.at("port_xmit_wait"), 4294967295u);    // saturated 32-bit
  EXPECT_EQ(mlx4->ports[0].counters.at("port_rcv_packets"), 6825908347u);  // > 2^32
  EXPECT_EQ(mlx4->ports[1].counters.size(), 8u);  // port 2 has only 8 counters: no others invented
  EXPECT_TRUE(Contains(r.text, "rdma_port_transmit_wait_total{device=\"mlx4_0\",port=\"1\"} 4294967295"));
  EXPECT_TRUE(Contains(r.text, "rdma_port_legacy_data_received_bytes_total{device=\"mlx4_0\",port=\"2\"} 18527668"));
  EXPECT_FALSE(Contains(r.text, "rdma_port_constraint_errors_received_total{device=\"mlx4_0\",port=\"2\"}"));
}

TEST(RdmaDevicesTest, MissingClassDirIsZeroDevicesNotAFailure) {
  TempDir dir;
  Devices c;
  CollectRun r = Collect(c, dir.path());
  EXPECT_TRUE(r.status.ok());
  EXPECT_FALSE(r.topology.class_dir_present);
  EXPECT_TRUE(r.facts.devices.empty());
  EXPECT_TRUE(Contains(r.text, "rdma_devices_found 0"));
}

TEST(RdmaDevicesTest, UnlistableClassDirFailsTheCollector) {
  TempDir dir;
  dir.Write("class/infiniband", "not a directory\n");
  Devices c;
  CollectRun r = Collect(c, dir.path());
  ASSERT_FALSE(r.status.ok());
  EXPECT_NE(r.status.error().message.find("class/infiniband"), std::string::npos);
}

TEST(RdmaDevicesTest, UnreadableAndGarbageValuesSkipOnlyThatValue) {
  TempDir dir;
  MakeDevice(dir, "rxe0");
  const std::string port = "devices/virtual/infiniband/rxe0/ports/1/";
  dir.MkDir(port + "hw_counters/broken");  // not a regular file (EISDIR), like EINVAL/EACCES would
  dir.Write(port + "hw_counters/garbled", "12abc\n");
  Devices c;
  CollectRun r = Collect(c, dir.path());
  ASSERT_TRUE(r.status.ok());
  ASSERT_EQ(r.facts.devices.size(), 1u);
  const RdmaPortFacts& p = r.facts.devices[0].ports[0];
  EXPECT_EQ(p.hw_counters.size(), 2u);  // sent_pkts, rcvd_pkts
  EXPECT_FALSE(p.hw_counters.contains("broken"));
  EXPECT_FALSE(p.hw_counters.contains("garbled"));
  EXPECT_TRUE(p.state.has_value());
  ASSERT_EQ(r.outcome.errors.size(), 2u);
  EXPECT_TRUE(Contains(r.outcome.errors[0], "hw_counters/broken"));
  EXPECT_TRUE(Contains(r.outcome.errors[0], "not a regular file (a directory)"));
  EXPECT_TRUE(Contains(r.outcome.errors[1], "hw_counters/garbled"));
  EXPECT_FALSE(Contains(r.outcome.errors[1], "12abc"));
  // Both are named for the checks: a value that could not be read is as absent as one that is no
  // number (the directory's read fails outright: no backoff for EISDIR).
  EXPECT_EQ(p.unparseable, (std::vector<std::string>{"hw_counters/broken", "hw_counters/garbled"}));
  EXPECT_TRUE(p.counters.empty());  // rxe has no counters/ directory: normal, no error
}

// A counter file larger than the read cap cannot be read: its value is absent, its file named
// (never its text), and the error-rate check that needs it is unknown, not "no error counter over
// its limit".
TEST(RdmaDevicesTest, ACounterFileOverTheReadCapIsNamedAndItsCheckUnknown) {
  TempDir dir;
  MakeDevice(dir, "rxe0");
  const std::string port = "devices/virtual/infiniband/rxe0/ports/1/";
  dir.Write(port + "hw_counters/retry_exceeded_err", std::string(100 * 1024, '7') + "\n");
  Devices c;
  CollectRun r = Collect(c, dir.path());
  ASSERT_TRUE(r.status.ok());
  const RdmaPortFacts& p = r.facts.devices.at(0).ports.at(0);
  EXPECT_FALSE(p.hw_counters.contains("retry_exceeded_err"));
  EXPECT_EQ(p.unparseable, std::vector<std::string>{"hw_counters/retry_exceeded_err"});
  ASSERT_EQ(r.outcome.errors.size(), 1u);
  EXPECT_TRUE(Contains(r.outcome.errors[0], "retry_exceeded_err")) << r.outcome.errors[0];
  EXPECT_FALSE(Contains(r.outcome.errors[0], "7777777")) << r.outcome.errors[0];
  History history;
  auto check = CheckRegistry().Find("roce_transport_errors")->factory();
  std::vector<CheckResult> out;
  RunCheck("roce_transport_errors", *check, r.snapshot, Config{}, history, History::Clock::now(), out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].verdict, Verdict::kUnknown);
  EXPECT_EQ(out[0].reason, "cannot judge every error counter: hw_counters/retry_exceeded_err holds no count (not a "
                           "number, or unreadable)");
}

// Counter files whose text is not a whole number from 0 to 2^64-1: each value is left out and its
// file named in the port's facts (for the checks that need it to say unknown), and no error message
// repeats what the file holds (kilobytes of digits, or bytes a terminal acts on).
TEST(RdmaDevicesTest, CounterFilesThatAreNotNumbersAreNamedNeverEchoed) {
  TempDir dir;
  MakeDevice(dir, "rxe0");
  const std::string port = "devices/virtual/infiniband/rxe0/ports/1/";
  const std::map<std::string, std::string> garbage = {
      {"rcvd_seq_err", "13abc\n"},
      {"retry_exceeded_err", "-1\n"},
      {"duplicate_request", "18446744073709551616\n"},  // 2^64
      {"completer_retry_err", std::string(60 * 1024, '7') + "\n"},
      {"out_of_seq_request", "\x1b]0;owned\x07 12\n"},
  };
  for (const auto& [name, text] : garbage) dir.Write(port + "hw_counters/" + name, text);
  dir.Write(port + "hw_counters/retry_rnr_exceeded_err", "18446744073709551615\n");  // 2^64-1: a number
  Devices c;
  CollectRun r = Collect(c, dir.path());
  ASSERT_TRUE(r.status.ok());
  const RdmaPortFacts& p = r.facts.devices.at(0).ports.at(0);
  EXPECT_EQ(p.hw_counters.Find("retry_rnr_exceeded_err"), std::optional<std::uint64_t>(UINT64_MAX));
  std::vector<std::string> named;
  for (const auto& [name, text] : garbage) {
    EXPECT_FALSE(p.hw_counters.contains(name)) << name;
    named.push_back("hw_counters/" + name);
  }
  std::vector<std::string> got = p.unparseable;
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, named);
  ASSERT_EQ(r.outcome.errors.size(), garbage.size());
  for (const std::string& e : r.outcome.errors) {
    EXPECT_TRUE(Contains(e, "not a value of this file")) << e;
    EXPECT_LT(e.size(), 300u) << e;
    for (const char* echoed : {"13abc", "18446744073709551616", "7777777777", "owned", "\x1b"}) {
      EXPECT_FALSE(Contains(e, echoed)) << e;
    }
  }
  // The error-rate check that needs them says unknown naming the files, not "no error counter over
  // its limit", on the second collection as on the first.
  History history;
  auto check = CheckRegistry().Find("roce_transport_errors")->factory();
  const History::TimePoint t0 = History::Clock::now();
  for (int i = 0; i < 2; ++i) {
    CollectRun again = i == 0 ? r : Collect(c, dir.path());
    std::vector<CheckResult> out;
    RunCheck("roce_transport_errors", *check, again.snapshot, Config{}, history, t0 + std::chrono::seconds(15 * i),
             out);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].verdict, Verdict::kUnknown);
    EXPECT_EQ(out[0].reason, "cannot judge every error counter: hw_counters/completer_retry_err, "
                             "hw_counters/duplicate_request, hw_counters/out_of_seq_request, "
                             "hw_counters/rcvd_seq_err and 1 more hold no count (not numbers, or unreadable)");
  }
}

TEST(RdmaDevicesTest, ADanglingCounterSymlinkCostsThatValueNotTheDevice) {
  // One dangling symlink in hw_counters/ (and one in counters/) of a device whose port is DOWN:
  // the device and its DOWN port must stay, so port_active still fails.
  TempDir dir;
  MakeDevice(dir, "mlx5_0");
  const std::string port = "devices/virtual/infiniband/mlx5_0/ports/1/";
  dir.Write(port + "state", "1: DOWN\n");
  dir.Write(port + "phys_state", "3: Disabled\n");
  dir.Symlink("../../../../../../nowhere/np_cnp_sent", port + "hw_counters/np_cnp_sent");
  dir.Write(port + "counters/port_rcv_errors", "5\n");
  dir.Symlink("gone", port + "counters/symbol_error");
  Devices c;
  for (int scrape = 0; scrape < 2; ++scrape) {  // discovery, then the held steady state
    CollectRun run = Collect(c, dir.path());
    ASSERT_TRUE(run.status.ok());
    const CollectorOutcome& outcome = run.outcome;
    const auto* facts = run.snapshot.Get<RdmaDevicesFacts>();
    ASSERT_NE(facts, nullptr);
    ASSERT_EQ(facts->devices.size(), 1u) << (outcome.errors.empty() ? "" : outcome.errors.front());
    const RdmaPortFacts& p = facts->devices[0].ports.at(0);
    ASSERT_TRUE(p.state.has_value());
    EXPECT_EQ(p.state->id, 1u);
    EXPECT_EQ(p.hw_counters.size(), 2u);  // sent_pkts, rcvd_pkts read; np_cnp_sent absent
    EXPECT_FALSE(p.hw_counters.contains("np_cnp_sent"));
    EXPECT_EQ(p.counters.at("port_rcv_errors"), 5u);
    EXPECT_EQ(facts->devices[0].fw_ver, "1.0.0");
    // Each missing value is one error naming its file.
    ASSERT_EQ(outcome.errors.size(), 2u);
    EXPECT_TRUE(Contains(outcome.errors[0], "counters/symbol_error")) << outcome.errors[0];
    EXPECT_TRUE(Contains(outcome.errors[1], "hw_counters/np_cnp_sent")) << outcome.errors[1];

    std::vector<CheckResult> verdicts = RunRegisteredCheck("port_active", run.snapshot, Config{});
    ASSERT_EQ(verdicts.size(), 1u);
    EXPECT_EQ(verdicts[0].subject, "mlx5_0/1");
    EXPECT_EQ(verdicts[0].verdict, Verdict::kFailed);
  }
}

// Verdicts of every registered check on one snapshot, as "check subject verdict reason" lines.
std::vector<std::string> AllVerdicts(const std::string& sysfs_root, Devices& c) {
  CollectRun run = Collect(c, sysfs_root);
  EXPECT_TRUE(run.status.ok());
  std::vector<CheckResult> results;
  for (const auto& reg : CheckRegistry().entries()) {
    RunCheck(reg.name, *reg.factory(), run.snapshot, Config{}, results);
  }
  std::vector<std::string> out;
  for (const CheckResult& r : results) {
    out.push_back(r.check + " " + r.subject + " " + std::string(VerdictName(r.verdict)) + " " + r.reason);
  }
  return out;
}

TEST(RdmaDevicesTest, AHeldFileBudgetChangesNoValueAndNoVerdict) {
  // The multi-device fixtures read with every file held, then under a budget of 10 held files:
  // the same exposition, errors and verdicts on every scrape, and never more than 10 held.
  for (const std::string tree : {"sysfs/mlx5-roce/sys", "sysfs/degraded/sys"}) {
    const std::string root = ProjectFixture(tree);
    HeldFdBudget& budget = HeldFdBudget::Process();
    std::string unbudgeted_text;
    std::vector<std::string> unbudgeted_errors, unbudgeted_verdicts;
    {
      ScopedHeldFdBudget unlimited(1'000'000);
      Devices c;
      CollectRun r = Collect(c, root);
      unbudgeted_text = r.text;
      unbudgeted_errors = r.outcome.errors;
      unbudgeted_verdicts = AllVerdicts(root, c);
      ASSERT_GT(c.held_descriptors(), 100u) << tree;  // the fixture is big enough to matter
    }
    const std::size_t base = budget.held();
    ScopedHeldFdBudget scoped(base + 10);
    Devices c;
    for (int scrape = 0; scrape < 3; ++scrape) {
      CollectRun r = Collect(c, root);
      ASSERT_TRUE(r.status.ok());
      EXPECT_EQ(r.text, unbudgeted_text) << tree << " scrape " << scrape;
      EXPECT_EQ(r.outcome.errors, unbudgeted_errors) << tree;
      EXPECT_LE(budget.held(), base + 10);
      EXPECT_EQ(c.held_descriptors(), 10u);
      EXPECT_EQ(AllVerdicts(root, c), unbudgeted_verdicts) << tree;
    }
    EXPECT_GT(budget.unheld_reads(), 0u);
  }
}

TEST(RdmaDevicesTest, DeviceVanishedBetweenListingAndReadingIsSkipped) {
  TempDir dir;
  MakeDevice(dir, "rxe0");
  dir.Symlink("../../devices/virtual/infiniband/rxe9", "class/infiniband/rxe9");  // target gone
  Devices c;
  CollectRun r = Collect(c, dir.path());
  ASSERT_TRUE(r.status.ok());
  ASSERT_EQ(r.facts.devices.size(), 1u);
  EXPECT_EQ(r.facts.devices[0].name, "rxe0");
  ASSERT_EQ(r.outcome.errors.size(), 1u);
  EXPECT_TRUE(Contains(r.outcome.errors[0], "rxe9"));
  EXPECT_TRUE(Contains(r.outcome.errors[0], "No such file or directory"));
}

TEST(RdmaDevicesTest, HeldDescriptorsAreReusedAndSeeNewValues) {
  ScopedHeldFdBudget budget(1'000'000);  // counts held descriptors: not limited by the runner's nofile
  TempDir dir;
  MakeDevice(dir, "rxe0");
  Devices c;
  CollectRun first = Collect(c, dir.path());
  ASSERT_EQ(first.facts.devices.size(), 1u);
  const std::size_t held = c.held_descriptors();
  EXPECT_EQ(held, 6u);  // fw_ver, state, phys_state, rate, 2 hw counters (link_layer is stable; no GID table)

  const std::string port = dir.path() + "/devices/virtual/infiniband/rxe0/ports/1/";
  Overwrite(port + "hw_counters/sent_pkts", "1200\n");
  Overwrite(port + "state", "1: DOWN\n");
  CollectRun second = Collect(c, dir.path());
  EXPECT_EQ(c.held_descriptors(), held);
  ASSERT_EQ(second.facts.devices.size(), 1u);
  EXPECT_EQ(second.facts.devices[0].ports[0].hw_counters.at("sent_pkts"), 1200u);
  EXPECT_EQ(second.facts.devices[0].ports[0].state, (SysfsEnumValue{1, "DOWN"}));
}

// Identity attributes and the link layer are fixed while the device exists: read once. fw_ver
// changes on a live firmware activation and the port state at any time: re-read every scrape.
TEST(RdmaDevicesTest, StableAttributesAreReadOnceAndFirmwareEveryScrape) {
  TempDir dir;
  MakeDevice(dir, "rxe0", "1.0.0");
  const std::string d = "devices/virtual/infiniband/rxe0/";
  dir.Write(d + "board_id", "MT_0000000224\n");
  dir.Write(d + "node_guid", "b859:9f03:0000:1a2b\n");
  Devices c;
  CollectRun first = Collect(c, dir.path());
  ASSERT_EQ(first.facts.devices.size(), 1u);
  EXPECT_EQ(first.facts.devices[0].board_id, "MT_0000000224");

  const std::string base = dir.path() + "/" + d;
  Overwrite(base + "board_id", "changed\n");
  Overwrite(base + "node_guid", "changed\n");
  Overwrite(base + "ports/1/link_layer", "InfiniBand\n");
  Overwrite(base + "fw_ver", "2.0.0\n");
  Overwrite(base + "ports/1/state", "1: DOWN\n");
  CollectRun second = Collect(c, dir.path());
  ASSERT_EQ(second.facts.devices.size(), 1u);
  const RdmaDeviceFacts& dev = second.facts.devices[0];
  EXPECT_EQ(dev.board_id, "MT_0000000224");
  EXPECT_EQ(dev.node_guid, "b859:9f03:0000:1a2b");
  EXPECT_EQ(second.Port(0, 0).link_layer, "Ethernet");
  EXPECT_EQ(dev.fw_ver, "2.0.0");
  EXPECT_EQ(dev.ports[0].state, (SysfsEnumValue{1, "DOWN"}));
  EXPECT_TRUE(Contains(second.text, "board_id=\"MT_0000000224\""));
  EXPECT_TRUE(Contains(second.text, "firmware_version=\"2.0.0\""));
}

// A stable attribute that could not be read is not cached as absent: it is read again.
TEST(RdmaDevicesTest, StableAttributeFailingToReadIsRetried) {
  TempDir dir;
  MakeDevice(dir, "rxe0");
  const std::string board = "devices/virtual/infiniband/rxe0/board_id";
  dir.MkDir(board);  // exists, but read() fails (EISDIR)
  Devices c;
  CollectRun first = Collect(c, dir.path());
  ASSERT_EQ(first.facts.devices.size(), 1u);
  EXPECT_FALSE(first.facts.devices[0].board_id);
  ASSERT_EQ(first.outcome.errors.size(), 1u);
  EXPECT_TRUE(Contains(first.outcome.errors[0], "board_id"));

  CollectRun second = Collect(c, dir.path());
  EXPECT_EQ(second.outcome.errors.size(), 1u);  // still tried, still failing, still reported
  std::filesystem::remove(dir.path() + "/" + board);
  dir.Write(board, "MT_0000000224\n");
  CollectRun third = Collect(c, dir.path());
  ASSERT_EQ(third.facts.devices.size(), 1u);
  EXPECT_EQ(third.facts.devices[0].board_id, "MT_0000000224");
  EXPECT_TRUE(third.outcome.errors.empty());
}

// Snapshots keep their counter names after the collector dropped the layout they came from.
TEST(RdmaDevicesTest, CounterValuesOutliveTheLayout) {
  TempDir dir;
  MakeDevice(dir, "rxe0");
  auto c = std::make_unique<Devices>();
  CollectRun r = Collect(*c, dir.path());
  c.reset();  // layouts, descriptors and the collector's references to the names are gone
  ASSERT_EQ(r.facts.devices.size(), 1u);
  const CounterValues& hw = r.facts.devices[0].ports[0].hw_counters;
  ASSERT_EQ(hw.slot_count(), 2u);
  EXPECT_EQ(hw.name(0), "rcvd_pkts");
  EXPECT_EQ(hw.at("sent_pkts"), 0u);
}

// Two devices of one driver share one name list (Render maps named counters once per list), and
// each snapshot's values stay its own.
TEST(RdmaDevicesTest, PortsWithEqualCounterFilesShareOneNameList) {
  Devices c;
  CollectRun r = Collect(c, ProjectFixture("sysfs/mlx5-roce/sys"));
  ASSERT_EQ(r.facts.devices.size(), 2u);
  const CounterValues& a = r.facts.devices[0].ports[0].hw_counters;
  const CounterValues& b = r.facts.devices[1].ports[0].hw_counters;
  ASSERT_NE(a.names(), nullptr);
  EXPECT_EQ(a.names(), b.names());  // the fixture's two devices list the same hw_counters/
  EXPECT_EQ(r.facts.devices[0].ports[0].counters.names(), r.facts.devices[1].ports[0].counters.names());
  CollectRun again = Collect(c, ProjectFixture("sysfs/mlx5-roce/sys"));
  EXPECT_EQ(again.facts.devices[0].ports[0].hw_counters.names(), a.names());
  EXPECT_EQ(again.facts.devices[0].ports[0].hw_counters.at("np_cnp_sent"), 3600u);
}

TEST(RdmaDevicesTest, DeviceLeavingTheListingReleasesItsDescriptors) {
  ScopedHeldFdBudget budget(1'000'000);  // counts held descriptors: not limited by the runner's nofile
  TempDir dir;
  MakeDevice(dir, "rxe0");
  MakeDevice(dir, "rxe1");
  Devices c;
  Collect(c, dir.path());
  const std::size_t both = c.held_descriptors();
  std::filesystem::remove(dir.path() + "/class/infiniband/rxe1");  // `rdma link delete rxe1`
  CollectRun r = Collect(c, dir.path());
  ASSERT_EQ(r.facts.devices.size(), 1u);
  EXPECT_EQ(c.held_descriptors(), both / 2);
  EXPECT_TRUE(r.outcome.errors.empty());
}

TEST(RdmaDevicesTest, DeviceRecreatedUnderTheSameNameIsRediscovered) {
  TempDir dir;
  MakeDevice(dir, "rxe0", "1.0.0");
  Devices c;
  CollectRun before = Collect(c, dir.path());
  ASSERT_EQ(before.facts.devices.size(), 1u);
  ASSERT_EQ(before.facts.devices[0].ports[0].hw_counters.size(), 2u);

  // Re-create: the old directory stays alive elsewhere (so held descriptors still read it, as
  // they never would on sysfs), the new one has another firmware and a new counter.
  const std::string base = dir.path() + "/devices/virtual/infiniband/";
  std::filesystem::rename(base + "rxe0", base + "rxe0-old");
  dir.Write("devices/virtual/infiniband/rxe0/fw_ver", "2.0.0\n");
  dir.Write("devices/virtual/infiniband/rxe0/ports/1/state", "4: ACTIVE\n");
  dir.Write("devices/virtual/infiniband/rxe0/ports/1/hw_counters/sent_pkts", "5\n");
  dir.Write("devices/virtual/infiniband/rxe0/ports/1/hw_counters/retry_exceeded_err", "1\n");
  CollectRun after = Collect(c, dir.path());
  ASSERT_EQ(after.facts.devices.size(), 1u);
  EXPECT_EQ(after.facts.devices[0].fw_ver, "2.0.0");
  EXPECT_EQ(after.facts.devices[0].ports[0].hw_counters.size(), 2u);
  EXPECT_EQ(after.facts.devices[0].ports[0].hw_counters.at("retry_exceeded_err"), 1u);
  EXPECT_FALSE(after.facts.devices[0].ports[0].rate_bytes_per_second);  // no rate file any more
  EXPECT_TRUE(after.outcome.errors.empty());
}

// Re-created after the topology stage read it and before the devices collector did (its held files
// answer ENODEV, as sysfs does for a device that went): the collector lists the new device's files
// for this collection and reads them at once, so the device costs no values.
TEST(RdmaDevicesTest, DeviceRecreatedBetweenTheTopologyStageAndTheCollectorIsReadAgainAtOnce) {
  class GoneOnce : public FsFaults {
   public:
    int BeforeRead(const std::string& path) override {
      if (!armed || !path.ends_with("/rxe0/fw_ver")) return 0;
      armed = false;
      return ENODEV;
    }
    bool armed = false;
  };
  TempDir dir;
  MakeDevice(dir, "rxe0", "1.0.0");
  auto faults = std::make_shared<GoneOnce>();
  NodeFs fs = NodeFs(dir.path(), "/nonexistent-proc").WithFaultsForTest(faults);
  Devices c;
  ASSERT_EQ(CollectFrom(c, fs).facts.devices.at(0).fw_ver, "1.0.0");

  Config config;
  Topology topology = c.topology.Discover(fs, config);
  const std::string base = dir.path() + "/devices/virtual/infiniband/";
  std::filesystem::rename(base + "rxe0", base + "rxe0-old");
  dir.Write("devices/virtual/infiniband/rxe0/fw_ver", "2.0.0\n");  // the class link now leads here
  dir.Write("devices/virtual/infiniband/rxe0/ports/1/state", "4: ACTIVE\n");
  faults->armed = true;
  CollectContext ctx{fs, config, topology};
  Snapshot snapshot;
  CollectorOutcome outcome;
  ASSERT_TRUE(c.collector.Collect(ctx, snapshot, outcome).ok());
  EXPECT_FALSE(faults->armed);  // the held fw_ver of the old device was read, and said gone
  EXPECT_TRUE(outcome.errors.empty()) << outcome.errors.front();
  const auto* facts = snapshot.Get<RdmaDevicesFacts>();
  ASSERT_NE(facts, nullptr);
  ASSERT_EQ(facts->devices.size(), 1u);
  EXPECT_EQ(facts->devices[0].fw_ver, "2.0.0");
  EXPECT_EQ(facts->devices[0].ports.at(0).state, (SysfsEnumValue{4, "ACTIVE"}));
}

TEST(RdmaDevicesTest, DeviceFilterLimitsDevicesAndReleasesExcluded) {
  ScopedHeldFdBudget budget(1'000'000);  // counts held descriptors: not limited by the runner's nofile
  Devices c;
  const std::string root = ProjectFixture("sysfs/mlx5-roce/sys");
  Collect(c, root);
  const std::size_t both = c.held_descriptors();
  Config config;
  config.devices.exclude = {"mlx5_1"};
  CollectRun r = Collect(c, root, config);
  ASSERT_EQ(r.facts.devices.size(), 1u);
  EXPECT_EQ(r.facts.devices[0].name, "mlx5_0");
  EXPECT_LT(c.held_descriptors(), both);
  EXPECT_TRUE(Contains(r.text, "rdma_devices_found 1"));
}

TEST(RdmaDevicesTest, GidWindowSeesAdditionsAndRemovalsWithoutReadingTheWholeTable) {
  ScopedHeldFdBudget budget(1'000'000);  // counts held descriptors: not limited by the runner's nofile
  TempDir dir;
  MakeDevice(dir, "rxe0");
  const std::string port = "devices/virtual/infiniband/rxe0/ports/1/";
  for (int i = 0; i < 64; ++i) dir.Write(port + "gids/" + std::to_string(i), "0000:0000:0000:0000:0000:0000:0000:0000\n");
  auto set_gid = [&](int i, const std::string& gid, const std::string& type) {
    Overwrite(GidPath(dir, "rxe0", i), gid + "\n");
    dir.Write(port + "gid_attrs/types/" + std::to_string(i), type + "\n");
    dir.Write(port + "gid_attrs/ndevs/" + std::to_string(i), "eth0\n");
  };
  set_gid(0, "fe80:0000:0000:0000:5054:00ff:fe12:3456", "IB/RoCE v1");
  set_gid(1, "fe80:0000:0000:0000:5054:00ff:fe12:3456", "RoCE v2");

  Devices c;
  CollectRun r1 = Collect(c, dir.path());  // first collection scans the whole table
  ASSERT_EQ(r1.facts.devices.size(), 1u);
  EXPECT_EQ(r1.Port(0, 0).roce_v2_gid_count, 1u);
  EXPECT_EQ(r1.Port(0, 0).netdev, "eth0");
  const std::size_t held_after_first = c.held_descriptors();
  EXPECT_LT(held_after_first, 20u);  // the 64-slot table is not held open

  // An address is added: the kernel puts its GIDs in the lowest free slots, 2 and 3.
  set_gid(2, "0000:0000:0000:0000:0000:ffff:c0a8:0101", "IB/RoCE v1");
  CollectRun r2 = Collect(c, dir.path());
  set_gid(3, "0000:0000:0000:0000:0000:ffff:c0a8:0101", "RoCE v2");
  CollectRun r3 = Collect(c, dir.path());
  EXPECT_EQ(r3.Port(0, 0).gids.size(), 4u);
  EXPECT_EQ(r3.Port(0, 0).roce_v2_gid_count, 2u);

  // Removed again: slot 3 reads zero at once.
  const std::size_t held_with_four = c.held_descriptors();
  Overwrite(GidPath(dir, "rxe0", 3), "0000:0000:0000:0000:0000:0000:0000:0000\n");
  CollectRun r4 = Collect(c, dir.path());
  EXPECT_EQ(r4.Port(0, 0).roce_v2_gid_count, 1u);
  // The address goes entirely: the window shrinks back to slots 0..2 and slot 3 is closed.
  Overwrite(GidPath(dir, "rxe0", 2), "0000:0000:0000:0000:0000:0000:0000:0000\n");
  Collect(c, dir.path());
  EXPECT_EQ(Collect(c, dir.path()).Port(0, 0).gids.size(), 2u);
  EXPECT_EQ(c.held_descriptors(), held_with_four - 1);

  // A GID far past the first free slot (not how the kernel allocates) is found by the periodic
  // full rescan, within kGidFullRescanInterval collections.
  set_gid(40, "fd00:0000:0000:0000:0000:0000:0000:0001", "RoCE v2");
  bool seen = false;
  for (int i = 0; i < TopologyDiscovery::kGidFullRescanInterval && !seen; ++i) {
    seen = Collect(c, dir.path()).Port(0, 0).roce_v2_gid_count == 2u;
  }
  EXPECT_TRUE(seen);
}

// One collection reads each file once: the topology stage and the devices collector share one
// discovery of the device, on the discovering collection and on a steady one.
TEST(RdmaDevicesTest, NoFileIsReadTwiceInOneCollection) {
  for (const std::string tree : {"sysfs/mlx5-roce/sys", "sysfs/degraded/sys"}) {
    auto faults = std::make_shared<CountingFaults>();
    NodeFs fs = NodeFs(ProjectFixture(tree), "/nonexistent-proc").WithFaultsForTest(faults);
    Devices c;
    for (int scrape = 0; scrape < 2; ++scrape) {
      faults->reads.clear();
      CollectRun r = CollectFrom(c, fs);
      ASSERT_TRUE(r.status.ok());
      ASSERT_FALSE(r.facts.devices.empty());
      EXPECT_GT(faults->ReadsOf("/state"), 0) << tree;  // the layer sees the held reads
      for (const auto& [path, count] : faults->reads) EXPECT_EQ(count, 1) << tree << " scrape " << scrape << ": " << path;
    }
  }
}

// A restricted PF answers EIO to its counters (and mlx5 logs an ACCESS_REG failure for each read):
// the file is read 1 min after the failure, then 2, 4, ... up to 1 h apart, not on every collection;
// its value is absent, the port names it, the same error is reported each time (logged once), and
// the rdma_read_* metrics count it. It reads again, and the value is back, once the fault is gone.
TEST(RdmaDevicesTest, ReadsThatFailAreRetriedWithBackoffNotOnEveryCollection) {
  TempDir dir;
  MakeDevice(dir, "mlx5_0");
  const std::string port = "devices/virtual/infiniband/mlx5_0/ports/1/";
  dir.Write(port + "counters/symbol_error", "3\n");
  dir.Write(port + "counters/link_downed", "1\n");
  auto faults = std::make_shared<CountingFaults>();
  faults->failing = {{"counters/symbol_error", EIO}};
  NodeFs fs = NodeFs(dir.path(), "/nonexistent-proc").WithFaultsForTest(faults);
  FakeClock clock;
  Devices c(clock.Now());

  std::string first_errors;
  CollectRun r;
  for (int i = 0; i < 100; ++i) {  // an hour at a 36 s interval
    r = CollectFrom(c, fs);
    ASSERT_TRUE(r.status.ok());
    ASSERT_EQ(r.facts.devices.size(), 1u);
    const RdmaPortFacts& p = r.facts.devices[0].ports.at(0);
    EXPECT_FALSE(p.counters.contains("symbol_error"));
    EXPECT_EQ(p.counters.at("link_downed"), 1u);
    EXPECT_EQ(p.read_backoff, (std::vector<BackedOffRead>{{"counters/symbol_error", "EIO"}}));
    ASSERT_EQ(r.outcome.errors.size(), 1u);
    if (i == 0) first_errors = r.outcome.errors[0];
    EXPECT_EQ(r.outcome.errors[0], first_errors);  // the same words: logged once
    clock.t += std::chrono::seconds(36);
  }
  EXPECT_NE(first_errors.find("counters/symbol_error"), std::string::npos) << first_errors;
  EXPECT_NE(first_errors.find("Input/output error"), std::string::npos) << first_errors;
  EXPECT_NE(first_errors.find("read again after 1 min, doubling up to 1 h"), std::string::npos) << first_errors;
  // Read at 0, 1.2, 3.6, 7.8, 16.2 and 32.4 min (the next at 64.8): 6 reads, not 100.
  EXPECT_EQ(faults->ReadsOf("counters/symbol_error"), 6);
  EXPECT_EQ(faults->ReadsOf("counters/link_downed"), 100);
  EXPECT_TRUE(Contains(r.text, "rdma_read_backoff_files{device=\"mlx5_0\"} 1\n")) << r.text;
  EXPECT_TRUE(Contains(r.text, "rdma_read_errors_total{device=\"mlx5_0\",errno=\"EIO\"} 6\n")) << r.text;
  EXPECT_FALSE(Contains(r.text, "rdma_port_symbol_error_total"));

  // Fixed (firmware or permissions): read at the next due time, and on every collection after.
  faults->failing.clear();
  clock.t += std::chrono::hours(1);
  CollectRun fixed = CollectFrom(c, fs);
  const RdmaPortFacts& p = fixed.facts.devices.at(0).ports.at(0);
  EXPECT_EQ(p.counters.at("symbol_error"), 3u);
  EXPECT_TRUE(p.read_backoff.empty());
  EXPECT_TRUE(fixed.outcome.errors.empty());
  EXPECT_TRUE(Contains(fixed.text, "rdma_read_backoff_files{device=\"mlx5_0\"} 0\n"));
  EXPECT_TRUE(Contains(fixed.text, "rdma_port_symbol_error_total{device=\"mlx5_0\",port=\"1\"} 3\n"));
  CollectFrom(c, fs);
  EXPECT_EQ(faults->ReadsOf("counters/symbol_error"), 8);
}

// A port in switch mode answers EINVAL to every read of its files: each is backed off alike, the
// device and its port stay (with no values), and port_active is unknown rather than judged.
TEST(RdmaDevicesTest, APortAnsweringEinvalToEveryReadIsBackedOffFileByFile) {
  TempDir dir;
  MakeDevice(dir, "mlx5_0");
  auto faults = std::make_shared<CountingFaults>();
  faults->failing = {{"/ports/1/", EINVAL}};
  NodeFs fs = NodeFs(dir.path(), "/nonexistent-proc").WithFaultsForTest(faults);
  FakeClock clock;
  Devices c(clock.Now());
  CollectRun r;
  for (int i = 0; i < 100; ++i) {
    r = CollectFrom(c, fs);
    clock.t += std::chrono::seconds(36);
  }
  ASSERT_EQ(r.facts.devices.size(), 1u);
  const RdmaPortFacts& p = r.facts.devices[0].ports.at(0);
  EXPECT_FALSE(p.state);
  EXPECT_FALSE(p.rate_bytes_per_second);
  // state, phys_state, rate and the two hw_counters (link_layer is the topology stage's, read once).
  ASSERT_EQ(p.read_backoff.size(), 5u);
  EXPECT_EQ(p.read_backoff[0], (BackedOffRead{"state", "EINVAL"}));
  EXPECT_EQ(p.read_backoff[4], (BackedOffRead{"hw_counters/sent_pkts", "EINVAL"}));
  EXPECT_EQ(faults->ReadsOf("/ports/1/state"), 6);
  EXPECT_LE(faults->ReadsOf("/ports/1/"), 5 * 6 + 100);  // + the topology stage's link_layer
  EXPECT_TRUE(Contains(r.text, "rdma_read_backoff_files{device=\"mlx5_0\"} 5\n"));
  EXPECT_TRUE(Contains(r.text, "rdma_read_errors_total{device=\"mlx5_0\",errno=\"EINVAL\"} 30\n"));
  std::vector<CheckResult> verdicts = RunRegisteredCheck("port_active", r.snapshot, Config{});
  ASSERT_EQ(verdicts.size(), 1u);
  EXPECT_EQ(verdicts[0].verdict, Verdict::kUnknown);
}

// docs/metrics.md's read-backoff section lists exactly the families a failing read exposes (they
// are absent from every fixture, where nothing fails so).
TEST(RdmaDevicesTest, MetricsDocListsTheReadBackoffFamilies) {
  TempDir dir;
  MakeDevice(dir, "mlx5_0");
  auto faults = std::make_shared<CountingFaults>();
  faults->failing = {{"hw_counters/sent_pkts", EPERM}};
  FakeClock clock;
  Devices c(clock.Now());
  CollectRun r = CollectFrom(c, NodeFs(dir.path(), "/nonexistent-proc").WithFaultsForTest(faults));
  std::set<std::string> exposed;
  std::istringstream text(r.text);
  for (std::string line; std::getline(text, line);) {
    if (line.rfind("rdma_read_", 0) == 0) exposed.insert(line.substr(0, line.find('{')));
  }
  EXPECT_EQ(testing::DocumentedFamilies("exposed only while a read fails"), exposed);
  EXPECT_EQ(exposed, (std::set<std::string>{"rdma_read_backoff_files", "rdma_read_errors_total"}));
}

}  // namespace
}  // namespace rdmahd
