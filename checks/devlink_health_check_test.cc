// devlink_health over the history: collection after collection of reporter states and counts.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

#include "core/check.h"
#include "core/history.h"
#include "facts/devlink_health_facts.h"

namespace rdmahd {
namespace {

using ::testing::HasSubstr;
using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

const History::TimePoint kT0 = History::TimePoint{} + hours(100);
// The wall clock of the collections (Snapshot::taken_at): 2025-12-02 10:00:00 UTC.
const std::chrono::system_clock::time_point kWall0{seconds(1764669600)};

DevlinkHealthReporter Reporter(const char* name, DevlinkHealthState state, std::uint64_t errors,
                               std::uint64_t recovers, std::optional<std::uint32_t> port = std::nullopt) {
  DevlinkHealthReporter r;
  r.bus_name = "pci";
  r.dev_name = "0000:08:00.0";
  r.name = name;
  r.port_index = port;
  r.state = state;
  r.error_count = errors;
  r.recover_count = recovers;
  return r;
}

struct Timeline {
  Config config;
  History history;
  std::unique_ptr<Check> check = CheckRegistry().Find("devlink_health")->factory();

  CheckResult At(seconds t, std::vector<DevlinkHealthReporter> reporters) {
    DevlinkHealthFacts facts;
    DevlinkHealthDeviceFacts& d = facts.devices.emplace_back();
    d.device = "mlx5_0";
    d.pci_address = "0000:08:00.0";
    d.read = true;
    d.reporters = std::move(reporters);
    return Judge(t, std::move(facts));
  }
  CheckResult Judge(seconds t, DevlinkHealthFacts facts) {
    Snapshot s;
    s.taken_at = kWall0 + t;
    s.Put(std::move(facts));
    std::vector<CheckResult> out;
    RunCheck("devlink_health", *check, s, config, history, kT0 + t, out);
    EXPECT_EQ(out.size(), 1u);
    return out.empty() ? CheckResult{} : out[0];
  }
};

std::vector<DevlinkHealthReporter> Mlx5(std::uint64_t rx_errors, DevlinkHealthState fatal_state = DevlinkHealthState::kHealthy) {
  return {Reporter("fw", DevlinkHealthState::kHealthy, 0, 0), Reporter("fw_fatal", fatal_state, 0, 0),
          Reporter("tx", DevlinkHealthState::kHealthy, 0, 0, 65535),
          Reporter("rx", DevlinkHealthState::kHealthy, rx_errors, rx_errors, 65535)};
}

TEST(DevlinkHealthCheckTest, HealthyReportersAreOk) {
  Timeline t;
  CheckResult r = t.At(seconds(0), Mlx5(0));
  EXPECT_EQ(r.verdict, Verdict::kOk);
  EXPECT_EQ(r.reason, "every devlink health reporter of pci/0000:08:00.0 is healthy with no error in the last 24 h "
                      "(fw, fw_fatal, tx (port 65535), rx (port 65535))");
  EXPECT_EQ(r.fix, "");
}

TEST(DevlinkHealthCheckTest, AReporterInErrorStateFails) {
  Timeline t;
  auto reporters = Mlx5(0);
  reporters[1] = Reporter("fw_fatal", DevlinkHealthState::kError, 1, 0);
  CheckResult r = t.At(seconds(0), reporters);
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_EQ(r.reason, "devlink health reporter fw_fatal of pci/0000:08:00.0 is in error state (1 errors, 0 recovered): "
                      "the driver has not recovered from it");
  EXPECT_THAT(r.fix, HasSubstr("`devlink health diagnose pci/0000:08:00.0 reporter fw_fatal`"));
  EXPECT_THAT(r.fix, HasSubstr("`devlink dev reload pci/0000:08:00.0`"));
}

TEST(DevlinkHealthCheckTest, ErrorsThatRoseWithin24HoursFailThenAge) {
  Timeline t;
  EXPECT_EQ(t.At(seconds(0), Mlx5(2)).verdict, Verdict::kWarning);  // one collection: when is unknown
  EXPECT_EQ(t.At(minutes(1), Mlx5(2)).verdict, Verdict::kOk);        // no rise since
  CheckResult r = t.At(minutes(2), Mlx5(3));
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_EQ(r.reason, "devlink health reporter rx (port 65535) of pci/0000:08:00.0 counted 1 error(s) in the last "
                      "24 h (3 errors, 3 recovered; healthy now)");
  EXPECT_THAT(r.fix, HasSubstr("`devlink health show pci/0000:08:00.0/65535 reporter rx`"));
  EXPECT_EQ(t.At(hours(12), Mlx5(3)).verdict, Verdict::kFailed);  // sticky
  EXPECT_EQ(t.At(hours(25), Mlx5(3)).verdict, Verdict::kOk);      // the rise left the window
}

TEST(DevlinkHealthCheckTest, OneCollectionUsesTheLastDumpTime) {
  auto reporters = Mlx5(0);
  reporters[1] = Reporter("fw_fatal", DevlinkHealthState::kHealthy, 1, 1);
  const auto wall_ns = [](std::chrono::system_clock::time_point p) {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(p.time_since_epoch()).count());
  };
  Timeline recent;
  reporters[1].last_dump_realtime_ns = wall_ns(kWall0 - hours(2));
  CheckResult r = recent.At(seconds(0), reporters);
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_THAT(r.reason, HasSubstr("fw_fatal of pci/0000:08:00.0 dumped within the last 24 h"));
  Timeline old;
  reporters[1].last_dump_realtime_ns = wall_ns(kWall0 - hours(30));
  r = old.At(seconds(0), reporters);
  EXPECT_EQ(r.verdict, Verdict::kWarning);
  EXPECT_THAT(r.reason, HasSubstr("whether they are recent needs a second collection"));
}

TEST(DevlinkHealthCheckTest, ADriverReloadIsNoErrorAndUnreadIsUnknown) {
  Timeline t;
  t.At(seconds(0), Mlx5(5));
  EXPECT_EQ(t.At(minutes(1), Mlx5(0)).verdict, Verdict::kOk);  // counts restarted: a new baseline
  EXPECT_EQ(t.At(minutes(2), Mlx5(0)).verdict, Verdict::kOk);

  EXPECT_EQ(t.At(minutes(3), {}).verdict, Verdict::kUnknown);
  EXPECT_THAT(t.At(minutes(3), {}).reason, HasSubstr("registers no devlink health reporter"));

  DevlinkHealthFacts facts;
  DevlinkHealthDeviceFacts& d = facts.devices.emplace_back();
  d.device = "mlx5_0";
  d.note = "not captured: devlink health reporters come from the node's kernel";
  CheckResult r = t.Judge(minutes(4), facts);
  EXPECT_EQ(r.verdict, Verdict::kUnknown);
  EXPECT_EQ(r.reason, d.note);
}

}  // namespace
}  // namespace rdmahd
