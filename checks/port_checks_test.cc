#include <grp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <sstream>
#include <utility>

#include "collectors/rdma_devices.h"
#include "collectors/topology_discovery.h"
#include "core/check.h"
#include "tests/support/test_paths.h"
#include "tests/support/topology.h"

namespace rdmahd {
namespace {

// A port as the checks see it: one fact, its Topology part (link layer, netdev, GIDs) included.
using TestPort = RdmaPortFacts;

TestPort HealthyRocePort() {
  TestPort p;
  p.device = "mlx5_0";
  p.port = 1;
  p.state = SysfsEnumValue{4, "ACTIVE"};
  p.phys_state = SysfsEnumValue{5, "LinkUp"};
  p.rate_bytes_per_second = 12'500'000'000;  // 100 Gb/s
  p.link_layer = "Ethernet";
  p.netdev = "ens1f0np0";
  p.roce_v2_gid_count = 2;
  return p;
}

std::vector<CheckResult> Evaluate(const std::string& check, const TestPort& port, const Config& config = {}) {
  RdmaDevicesFacts facts;
  RdmaDeviceFacts dev;
  dev.name = port.device;
  dev.ports.push_back(port);
  facts.devices.push_back(dev);
  Topology topology;
  topology.class_dir_present = true;
  TopologyDevice tdev;
  tdev.name = port.device;
  tdev.ports.push_back(port);
  topology.devices.push_back(tdev);
  Snapshot snapshot;
  snapshot.Put(facts);
  snapshot.Put(topology);
  std::vector<CheckResult> out = RunRegisteredCheck(check, snapshot, config);
  for (const auto& r : out) EXPECT_EQ(r.check, check);
  return out;
}

bool Has(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

TEST(PortActiveCheckTest, ActiveAndLinkUpIsOk) {
  auto out = Evaluate("port_active", HealthyRocePort());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].subject, "mlx5_0/1");
  EXPECT_EQ(out[0].verdict, Verdict::kOk);
  EXPECT_TRUE(out[0].fix.empty());
}

TEST(PortActiveCheckTest, DownPortFailsWithObservedStatesAndAFix) {
  TestPort p = HealthyRocePort();
  p.state = SysfsEnumValue{1, "DOWN"};
  p.phys_state = SysfsEnumValue{2, "Polling"};
  auto out = Evaluate("port_active", p);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].verdict, Verdict::kFailed);
  EXPECT_TRUE(Has(out[0].reason, "DOWN (1)")) << out[0].reason;
  EXPECT_TRUE(Has(out[0].reason, "Polling (2)")) << out[0].reason;
  EXPECT_TRUE(Has(out[0].fix, "cable")) << out[0].fix;
  EXPECT_TRUE(Has(out[0].fix, "rdma link show mlx5_0/1")) << out[0].fix;
}

// ibportstate takes the device, the port and the target port by direct route: printed bare it
// cannot run. The fix names only the command of the port's link layer when that is known.
TEST(PortActiveCheckTest, DisabledPortFixEnablesItWithTheCommandOfItsLinkLayer) {
  TestPort p = HealthyRocePort();
  p.state = SysfsEnumValue{1, "DOWN"};
  p.phys_state = SysfsEnumValue{3, "Disabled"};
  p.port = 2;
  auto roce = Evaluate("port_active", p);
  ASSERT_EQ(roce.size(), 1u);
  EXPECT_TRUE(Has(roce[0].fix, "enable it (`ip link set ens1f0np0 up`)")) << roce[0].fix;
  EXPECT_FALSE(Has(roce[0].fix, "ibportstate")) << roce[0].fix;
  p.link_layer = "InfiniBand";
  p.netdev.clear();
  auto ib = Evaluate("port_active", p);
  ASSERT_EQ(ib.size(), 1u);
  EXPECT_TRUE(Has(ib[0].fix, "enable it (`ibportstate -C mlx5_0 -P 2 -D 0 2 enable`)")) << ib[0].fix;
  p.link_layer.reset();
  auto unknown = Evaluate("port_active", p);
  ASSERT_EQ(unknown.size(), 1u);
  EXPECT_TRUE(Has(unknown[0].fix, "`ip link set <netdev> up` for RoCE, `ibportstate -C mlx5_0 -P 2 -D 0 2 enable` for "
                                   "InfiniBand"))
      << unknown[0].fix;
}

TEST(PortActiveCheckTest, LinkUpButNotActiveOnIbPointsAtTheSubnetManager) {
  TestPort p = HealthyRocePort();
  p.link_layer = "InfiniBand";
  p.netdev.clear();
  p.state = SysfsEnumValue{2, "INIT"};
  auto out = Evaluate("port_active", p);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].verdict, Verdict::kFailed);
  EXPECT_TRUE(Has(out[0].fix, "subnet manager")) << out[0].fix;
}

TEST(PortActiveCheckTest, UnreadableStateIsUnknownAndPolicyCanTurnItOff) {
  TestPort p = HealthyRocePort();
  p.phys_state.reset();
  auto out = Evaluate("port_active", p);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].verdict, Verdict::kUnknown);
  EXPECT_TRUE(Has(out[0].reason, "unreadable"));

  Config off;
  off.Section<PortPolicy>().require_active = false;
  EXPECT_TRUE(Evaluate("port_active", HealthyRocePort(), off).empty());
}

TEST(PortRateCheckTest, VerdictsAgainstThePolicyMinimum) {
  Config config;
  auto unset = Evaluate("port_rate", HealthyRocePort(), config);
  ASSERT_EQ(unset.size(), 1u);
  EXPECT_EQ(unset[0].verdict, Verdict::kUnknown);
  EXPECT_TRUE(Has(unset[0].reason, "no minimum configured (ports.min_rate_gbps)")) << unset[0].reason;
  EXPECT_TRUE(Has(unset[0].reason, "100 Gb/s")) << unset[0].reason;

  config.Section<PortPolicy>().min_rate_gbps = 100;
  EXPECT_EQ(Evaluate("port_rate", HealthyRocePort(), config)[0].verdict, Verdict::kOk);

  TestPort slow = HealthyRocePort();
  slow.rate_bytes_per_second = 3'125'000'000;  // 25 Gb/s
  auto failed = Evaluate("port_rate", slow, config);
  EXPECT_EQ(failed[0].verdict, Verdict::kFailed);
  EXPECT_TRUE(Has(failed[0].reason, "rate 25 Gb/s")) << failed[0].reason;
  EXPECT_TRUE(Has(failed[0].reason, "minimum 100 Gb/s")) << failed[0].reason;
  EXPECT_TRUE(Has(failed[0].fix, "ethtool ens1f0np0")) << failed[0].fix;

  config.Section<PortPolicy>().min_rate_gbps = 2.5;
  slow.rate_bytes_per_second = 312'500'000;  // exactly 2.5 Gb/s: not below
  EXPECT_EQ(Evaluate("port_rate", slow, config)[0].verdict, Verdict::kOk);
}

TEST(PortChecksTest, ReasonTextsAreExact) {
  // The reasons of the verdicts every healthy port gets on every scrape, whole: operators and log
  // searches read them verbatim.
  TestPort port = HealthyRocePort();
  EXPECT_EQ(Evaluate("port_active", port)[0].reason, "state ACTIVE (4), physical state LinkUp (5) (netdev ens1f0np0)");
  EXPECT_EQ(Evaluate("roce_v2_gid", port)[0].reason, "2 RoCE v2 GIDs (netdev ens1f0np0)");
  Config config;
  auto unset = Evaluate("port_rate", port, config)[0];
  EXPECT_EQ(unset.reason, "rate 100 Gb/s (netdev ens1f0np0); no minimum configured (ports.min_rate_gbps)");
  EXPECT_EQ(unset.fix, "set ports.min_rate_gbps in the config to the rate this node's links must train at");
  config.Section<PortPolicy>().min_rate_gbps = 2.5;
  EXPECT_EQ(Evaluate("port_rate", port, config)[0].reason, "rate 100 Gb/s (netdev ens1f0np0) >= minimum 2.5 Gb/s");
  // Rates that are not whole Gb/s, and a port without a netdev (InfiniBand).
  port.netdev.clear();
  port.link_layer = "InfiniBand";
  for (auto [bytes_per_second, text] : std::initializer_list<std::pair<std::uint64_t, const char*>>{
           {1'757'812'500, "rate 14.0625 Gb/s >= minimum 2.5 Gb/s"},
           {312'500'000, "rate 2.5 Gb/s >= minimum 2.5 Gb/s"},
           {6'250'000'000, "rate 50 Gb/s >= minimum 2.5 Gb/s"},
           {50'000'000'000, "rate 400 Gb/s >= minimum 2.5 Gb/s"}}) {
    port.rate_bytes_per_second = bytes_per_second;
    EXPECT_EQ(Evaluate("port_rate", port, config)[0].reason, text);
  }
  EXPECT_EQ(Evaluate("port_active", port)[0].reason, "state ACTIVE (4), physical state LinkUp (5)");
  port.state.reset();
  EXPECT_EQ(Evaluate("port_active", port)[0].reason,
            "state unreadable, physical state LinkUp (5): cannot tell whether the port is up");
}

TEST(PortRateCheckTest, DownPortOrUnreadableRateIsUnknown) {
  Config config;
  config.Section<PortPolicy>().min_rate_gbps = 100;
  TestPort down = HealthyRocePort();
  down.state = SysfsEnumValue{1, "DOWN"};
  down.rate_bytes_per_second = 1'250'000'000;
  auto out = Evaluate("port_rate", down, config);
  EXPECT_EQ(out[0].verdict, Verdict::kUnknown);
  EXPECT_TRUE(Has(out[0].reason, "DOWN")) << out[0].reason;

  TestPort unreadable = HealthyRocePort();
  unreadable.rate_bytes_per_second.reset();
  EXPECT_EQ(Evaluate("port_rate", unreadable, config)[0].verdict, Verdict::kUnknown);
}

// A file in read backoff (a port in switch mode answers EINVAL, a restricted PF EIO): the verdict
// names the file and the errno, as the devices collector records them, instead of a bare
// "unreadable".
TEST(PortActiveCheckTest, AStateInReadBackoffSaysSo) {
  TestPort p = HealthyRocePort();
  p.state.reset();
  p.read_backoff = {{"state", "EINVAL"}, {"counters/symbol_error", "EINVAL"}};
  auto out = Evaluate("port_active", p);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].verdict, Verdict::kUnknown);
  EXPECT_EQ(out[0].reason,
            "state unreadable, physical state LinkUp (5) (netdev ens1f0np0): cannot tell whether the port is up: "
            "state: EINVAL on read, retried with backoff (1 min doubling to 1 h; the kernel logs each failed read)");
}

TEST(PortRateCheckTest, ARateOrStateInReadBackoffSaysSo) {
  Config config;
  config.Section<PortPolicy>().min_rate_gbps = 100;
  TestPort p = HealthyRocePort();
  p.rate_bytes_per_second.reset();
  p.read_backoff = {{"rate", "EIO"}};
  auto out = Evaluate("port_rate", p, config);
  EXPECT_EQ(out[0].verdict, Verdict::kUnknown);
  EXPECT_TRUE(Has(out[0].reason, "rate unreadable (netdev ens1f0np0): rate: EIO on read, retried with backoff"))
      << out[0].reason;

  TestPort no_state = HealthyRocePort();
  no_state.state.reset();
  no_state.read_backoff = {{"state", "EPERM"}};
  out = Evaluate("port_rate", no_state, config);
  EXPECT_EQ(out[0].verdict, Verdict::kUnknown);
  EXPECT_TRUE(Has(out[0].reason, "in an unknown state")) << out[0].reason;
  EXPECT_TRUE(Has(out[0].reason, "; state: EPERM on read, retried with backoff")) << out[0].reason;
}

TEST(RoceV2GidCheckTest, Verdicts) {
  auto ok = Evaluate("roce_v2_gid", HealthyRocePort());
  ASSERT_EQ(ok.size(), 1u);
  EXPECT_EQ(ok[0].verdict, Verdict::kOk);
  EXPECT_TRUE(Has(ok[0].reason, "2 RoCE v2 GIDs")) << ok[0].reason;

  TestPort none = HealthyRocePort();
  none.roce_v2_gid_count = 0;
  auto failed = Evaluate("roce_v2_gid", none);
  EXPECT_EQ(failed[0].verdict, Verdict::kFailed);
  EXPECT_TRUE(Has(failed[0].fix, "ip addr add <ip>/<len> dev ens1f0np0")) << failed[0].fix;
  EXPECT_TRUE(Has(failed[0].fix, "rdma link show mlx5_0/1")) << failed[0].fix;

  TestPort unknown = HealthyRocePort();
  unknown.roce_v2_gid_count.reset();
  EXPECT_EQ(Evaluate("roce_v2_gid", unknown)[0].verdict, Verdict::kUnknown);
}

// A device that appears while the daemon runs fills its GID table a moment later (rxe: ~0.5 s after
// `rdma link add`): unknown for its first 10 s, then judged. A device of the first collection, or
// created anew (a new generation) long after, is judged on what the collection saw.
TEST(RoceV2GidCheckTest, ADeviceThatJustAppearedGetsTenSecondsForItsGids) {
  using std::chrono::milliseconds;
  const History::TimePoint t0{std::chrono::hours(1)};
  ASSERT_NE(CheckRegistry().Find("roce_v2_gid"), nullptr);
  std::unique_ptr<Check> check = CheckRegistry().Find("roce_v2_gid")->factory();
  History history;
  Config config;
  auto collect = [&](std::vector<std::pair<TestPort, std::uint64_t>> ports, History::TimePoint at) {
    RdmaDevicesFacts facts;
    Topology topology;
    topology.class_dir_present = true;
    for (auto& [port, generation] : ports) {
      RdmaDeviceFacts dev;
      dev.name = port.device;
      dev.ports.push_back(port);
      facts.devices.push_back(dev);
      TopologyDevice tdev;
      tdev.name = port.device;
      tdev.generation = generation;
      tdev.ports.push_back(port);
      topology.devices.push_back(tdev);
    }
    Snapshot snapshot;
    snapshot.Put(facts);
    snapshot.Put(topology);
    std::vector<CheckResult> out;
    RunCheck("roce_v2_gid", *check, snapshot, config, history, at, out);
    std::map<std::string, CheckResult> by_subject;
    for (auto& r : out) by_subject[r.subject] = r;
    return by_subject;
  };
  TestPort empty_at_start = HealthyRocePort();
  empty_at_start.roce_v2_gid_count = 0;
  TestPort rxe = HealthyRocePort();
  rxe.device = "rxe0";
  rxe.netdev = "veth0";
  rxe.roce_v2_gid_count = 0;

  // Present at the first collection: judged at once.
  auto first = collect({{empty_at_start, 1}}, t0);
  EXPECT_EQ(first.at("mlx5_0/1").verdict, Verdict::kFailed);
  // rxe0 appears 30 s later with no GID yet: unknown, saying why and when it will be judged.
  auto appeared = collect({{empty_at_start, 1}, {rxe, 2}}, t0 + std::chrono::seconds(30));
  EXPECT_EQ(appeared.at("mlx5_0/1").verdict, Verdict::kFailed);
  EXPECT_EQ(appeared.at("rxe0/1").verdict, Verdict::kUnknown);
  EXPECT_EQ(appeared.at("rxe0/1").reason,
            "rxe0 appeared 0 s ago and its GID table is still being filled (no GID of type RoCE v2 (0 non-empty GIDs, "
            "netdev veth0)): judged once it is 10 s old");
  EXPECT_TRUE(appeared.at("rxe0/1").fix.empty());
  // 9.9 s on: still coming up; 10 s on and still empty: a fault.
  EXPECT_EQ(collect({{rxe, 2}}, t0 + std::chrono::seconds(30) + milliseconds(9900)).at("rxe0/1").verdict,
            Verdict::kUnknown);
  EXPECT_EQ(collect({{rxe, 2}}, t0 + std::chrono::seconds(40)).at("rxe0/1").verdict, Verdict::kFailed);
  // Deleted and added again (a new generation): a new moment of grace; filled in time: ok.
  auto again = collect({{rxe, 3}}, t0 + std::chrono::seconds(100));
  EXPECT_EQ(again.at("rxe0/1").verdict, Verdict::kUnknown) << again.at("rxe0/1").reason;
  TestPort filled = rxe;
  filled.roce_v2_gid_count = 2;
  EXPECT_EQ(collect({{filled, 3}}, t0 + std::chrono::seconds(101)).at("rxe0/1").verdict, Verdict::kOk);
}

TEST(RoceV2GidCheckTest, InfiniBandPortsAreNotChecked) {
  TestPort ib = HealthyRocePort();
  ib.link_layer = "InfiniBand";
  ib.roce_v2_gid_count = 0;
  EXPECT_TRUE(Evaluate("roce_v2_gid", ib).empty());
}

TEST(PortChecksTest, NoFactsNoVerdicts) {
  Snapshot empty;
  std::vector<CheckResult> out;
  for (const char* name : {"port_active", "port_rate", "roce_v2_gid"}) {
    std::vector<CheckResult> some = RunRegisteredCheck(name, empty, Config{});
    out.insert(out.end(), some.begin(), some.end());
  }
  EXPECT_TRUE(out.empty());
}

// The degraded fixture end to end: collector facts into the checks.
TEST(PortChecksTest, DegradedFixture) {
  RdmaDevicesCollector collector;
  NodeFs fs(testing::ProjectFixture("sysfs/degraded/sys"), "/nonexistent");
  Config config;
  config.Section<PortPolicy>().min_rate_gbps = 100;
  TopologyDiscovery discovery;
  Topology topology = discovery.Discover(fs, config);
  Snapshot snapshot;
  snapshot.Put(topology);
  CollectorOutcome outcome;
  ASSERT_TRUE(collector.Collect(CollectContext{fs, config, topology}, snapshot, outcome).ok());
  std::vector<CheckResult> out;
  for (const char* name : {"port_active", "port_rate", "roce_v2_gid"}) {
    std::vector<CheckResult> some = RunRegisteredCheck(name, snapshot, config);
    out.insert(out.end(), some.begin(), some.end());
  }
  auto verdict = [&](const std::string& check, const std::string& subject) {
    for (const auto& r : out) {
      if (r.check == check && r.subject == subject) return VerdictName(r.verdict);
    }
    return std::string_view("missing");
  };
  EXPECT_EQ(verdict("port_active", "mlx5_0/1"), "ok");
  EXPECT_EQ(verdict("port_active", "mlx5_1/1"), "failed");
  EXPECT_EQ(verdict("port_active", "mlx4_0/2"), "failed");
  EXPECT_EQ(verdict("port_rate", "mlx5_0/1"), "failed");   // 25 < 100
  EXPECT_EQ(verdict("port_rate", "mlx4_0/1"), "failed");   // 40 < 100
  EXPECT_EQ(verdict("port_rate", "mlx5_1/1"), "unknown");  // DOWN
  EXPECT_EQ(verdict("roce_v2_gid", "mlx5_0/1"), "ok");
  EXPECT_EQ(verdict("roce_v2_gid", "mlx5_1/1"), "failed");  // empty GID table
  EXPECT_EQ(verdict("roce_v2_gid", "mlx4_0/1"), "failed");  // RoCE v1 only
}

// Runs `work` as an unprivileged user (nobody, 65534) in a child process when this test runs as
// root, whom a mode-000 folder does not stop; else in this process. Returns what `work` returned, or
// sets `skip` when the user could not be switched.
std::string RunUnprivileged(const std::function<std::string()>& work, std::string& skip) {
  if (::geteuid() != 0) return work();
  int fds[2];
  if (::pipe(fds) != 0) {
    skip = std::string("pipe: ") + std::strerror(errno);
    return "";
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    skip = std::string("fork: ") + std::strerror(errno);
    return "";
  }
  if (pid == 0) {
    ::close(fds[0]);
    std::string out;
    if (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) {
      out = std::string("SKIP cannot become nobody: ") + std::strerror(errno);
    } else {
      out = work();
    }
    for (std::size_t off = 0; off < out.size();) {
      const ssize_t n = ::write(fds[1], out.data() + off, out.size() - off);
      if (n <= 0) break;
      off += static_cast<std::size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) skip = "the unprivileged child did not finish";
  if (out.rfind("SKIP ", 0) == 0) skip = out.substr(5);
  return out;
}

// A device whose folder the daemon may not read (mode 000, daemon unprivileged): its ports cannot
// be listed, so each port check gives one unknown verdict for the device, with the reason, instead
// of its port rows vanishing. The readable device beside it is judged as usual.
TEST(PortChecksTest, UnreadableDeviceFolderGivesUnknownWithTheReason) {
  testing::TempDir dir;
  ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);  // mkdtemp's 0700 would stop nobody at the root
  for (const std::string dev : {"mlx5_0", "mlx5_1"}) {
    const std::string real = "devices/pci0000:00/0000:00:02.0/infiniband/" + dev;
    dir.Write(real + "/fw_ver", "22.36.1010\n");
    dir.Write(real + "/ports/1/state", "4: ACTIVE\n");
    dir.Write(real + "/ports/1/phys_state", "5: LinkUp\n");
    dir.Write(real + "/ports/1/rate", "100 Gb/sec (4X EDR)\n");
    dir.Write(real + "/ports/1/link_layer", "InfiniBand\n");
    dir.Symlink("../../" + real, "class/infiniband/" + dev);
  }
  const std::string locked = dir.path() + "/devices/pci0000:00/0000:00:02.0/infiniband/mlx5_0";
  ASSERT_EQ(::chmod(locked.c_str(), 0), 0);
  std::string skip;
  const std::string rows = RunUnprivileged(
      [&] {
        NodeFs fs(dir.path(), "/nonexistent");
        Config config;
        config.Section<PortPolicy>().require_roce_v2_gid = true;
        Topology topology = testing::DiscoverTopology(fs, config);
        Snapshot snapshot;
        snapshot.Put(topology);
        RdmaDevicesCollector collector;
        CollectorOutcome outcome;
        std::ostringstream out;
        if (Status st = collector.Collect(CollectContext{fs, config, topology}, snapshot, outcome); !st) {
          return "collect failed: " + st.error().message;
        }
        for (const char* name : {"port_active", "port_rate"}) {
          for (const CheckResult& r : RunRegisteredCheck(name, snapshot, config)) {
            out << r.check << " " << r.subject << " " << VerdictName(r.verdict) << " | " << r.reason << " | fix: " << r.fix
                << "\n";
          }
        }
        return out.str();
      },
      skip);
  ::chmod(locked.c_str(), 0755);
  if (!skip.empty()) GTEST_SKIP() << skip;
  for (const std::string check : {"port_active", "port_rate"}) {
    SCOPED_TRACE(check);
    EXPECT_TRUE(Has(rows, check + " mlx5_1/1 ")) << rows;
    const std::string row = check + " mlx5_0 unknown | ports unknown, none could be listed: ";
    const std::size_t at = rows.find(row);
    ASSERT_NE(at, std::string::npos) << rows;
    const std::string line = rows.substr(at, rows.find('\n', at) - at);
    EXPECT_TRUE(Has(line, "mlx5_0/ports: Permission denied")) << line;
    EXPECT_TRUE(Has(line, "fix: make /sys/class/infiniband/mlx5_0/ and its ports/ folder readable")) << line;
  }
  EXPECT_TRUE(Has(rows, "port_active mlx5_1/1 ok")) << rows;
}

}  // namespace
}  // namespace rdmahd
