// The pcie_aer collector on trees holding the kernel's real aer_dev_* files (new short names from
// node_exporter's fixture, old long names from the kernel's ABI document), read in place.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/collector.h"
#include "facts/pcie_aer_facts.h"
#include "tests/support/test_files.h"
#include "tests/support/test_paths.h"
#include "tests/support/topology.h"

namespace rdmahd {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::TempDir;

constexpr const char* kFunction = "sys/devices/pci0000:00/0000:01:00.0/";
constexpr const char* kNewNames = "sysfs/node-exporter-fixtures/sys/devices/pci0000:00/0000:00:02.1/0000:01:00.0/";

struct AerRun {
  Snapshot snapshot;
  CollectorOutcome outcome;
  std::string text;
};

AerRun CollectOnce(Collector& c, const NodeFs& fs) {
  AerRun r;
  Config config;
  const Topology topology = testing::DiscoverTopology(fs, config);
  EXPECT_TRUE(c.Collect(CollectContext{fs, config, topology}, r.snapshot, r.outcome).ok());
  MetricSink sink;
  c.Render(r.snapshot, sink);
  r.text = sink.Serialize();
  return r;
}

std::unique_ptr<Collector> MakeAer() {
  const auto* reg = CollectorRegistry().Find("pcie_aer");
  EXPECT_NE(reg, nullptr);
  return reg ? reg->factory() : nullptr;
}

// mlx5_0 on PCI function 0000:01:00.0, and the software device rxe0 (no PCI function).
void WriteDevices(const TempDir& t) {
  const std::string fn = kFunction;
  t.Write(fn + "infiniband/mlx5_0/ports/1/link_layer", "Ethernet\n");
  t.Write(fn + "infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
  t.Symlink("../../../0000:01:00.0", fn + "infiniband/mlx5_0/device");
  t.Symlink("../../devices/pci0000:00/0000:01:00.0/infiniband/mlx5_0", "sys/class/infiniband/mlx5_0");
  t.Write("sys/devices/virtual/infiniband/rxe0/ports/1/link_layer", "Ethernet\n");
  t.Symlink("../../devices/virtual/infiniband/rxe0", "sys/class/infiniband/rxe0");
}

TEST(PcieAerTest, RealNewFormatFilesBecomeOneSeriesPerErrorAndTotals) {
  if (!testing::RealFixturesAvailable()) GTEST_SKIP() << "../shared/fixtures/real not present";
  TempDir t;
  WriteDevices(t);
  for (const char* f : {"aer_dev_correctable", "aer_dev_nonfatal", "aer_dev_fatal"})
    t.Write(std::string(kFunction) + f, testing::ReadRealFixture(std::string(kNewNames) + f));
  NodeFs fs(t.path() + "/sys", t.path() + "/proc");
  auto c = MakeAer();
  AerRun r = CollectOnce(*c, fs);
  EXPECT_TRUE(r.outcome.errors.empty()) << r.outcome.errors.front();
  const auto* facts = r.snapshot.Get<PcieAerFacts>();
  ASSERT_NE(facts, nullptr);
  ASSERT_EQ(facts->devices.size(), 2u);
  EXPECT_EQ(facts->devices[0].device, "mlx5_0");
  EXPECT_EQ(facts->devices[0].pci_address, "0000:01:00.0");
  EXPECT_EQ(facts->devices[0].note, "");
  EXPECT_THAT(facts->devices[1].note, HasSubstr("no PCI function"));
  EXPECT_THAT(r.text, HasSubstr("rdma_pcie_aer_errors_total{device=\"mlx5_0\",severity=\"correctable\",error=\"RxErr\"} 0\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_pcie_aer_messages_total{device=\"mlx5_0\",severity=\"correctable\"} 0\n"));
  EXPECT_THAT(r.text, HasSubstr("severity=\"fatal\""));
  EXPECT_THAT(r.text, HasSubstr("severity=\"nonfatal\""));
  EXPECT_THAT(r.text, Not(HasSubstr("rxe0")));
  // Every family rendered is documented, and nothing documented is missing.
  EXPECT_EQ(testing::RenderedFamilies(r.text), testing::DocumentedFamilies("(collector `pcie_aer`)"));
}

TEST(PcieAerTest, OldLongNamesKeepTheShortNamesSeriesAndCountsMoveBetweenCollections) {
  if (!testing::RealFixturesAvailable()) GTEST_SKIP() << "../shared/fixtures/real not present";
  TempDir t;
  WriteDevices(t);
  const std::string fn = kFunction;
  t.Write(fn + "aer_dev_correctable",
          testing::ReadRealFixture("corpus/78a_sysfs_aer_dev_correctable_old_names_kernel_abi_doc.txt"));
  NodeFs fs(t.path() + "/sys", t.path() + "/proc");
  auto c = MakeAer();
  AerRun r = CollectOnce(*c, fs);
  // "Receiver Error 2" in the kernel's ABI document: the series a 6.x kernel calls RxErr.
  EXPECT_THAT(r.text, HasSubstr("rdma_pcie_aer_errors_total{device=\"mlx5_0\",severity=\"correctable\",error=\"RxErr\"} 2\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_pcie_aer_messages_total{device=\"mlx5_0\",severity=\"correctable\"} 2\n"));
  EXPECT_THAT(r.text, Not(HasSubstr("Receiver Error")));
  // Two files absent: said, not an error (a kernel may show some and not others only if broken).
  EXPECT_TRUE(r.outcome.errors.empty());
  EXPECT_EQ(r.snapshot.Get<PcieAerFacts>()->devices[0].note, "aer_dev_nonfatal, aer_dev_fatal unreadable");
  // The held file is read again: a new count shows on the next collection.
  t.Write(fn + "aer_dev_correctable", "RxErr 7\nBadTLP 1\nTOTAL_ERR_COR 8\n");
  r = CollectOnce(*c, fs);
  EXPECT_THAT(r.text, HasSubstr("error=\"RxErr\"} 7\n"));
  EXPECT_THAT(r.text, HasSubstr("error=\"BadTLP\"} 1\n"));
}

TEST(PcieAerTest, NoAerFilesIsANoteAndABadFileCostsOnlyItsSeries) {
  TempDir t;
  WriteDevices(t);
  NodeFs fs(t.path() + "/sys", t.path() + "/proc");
  auto c = MakeAer();
  AerRun r = CollectOnce(*c, fs);
  EXPECT_TRUE(r.outcome.errors.empty());
  EXPECT_THAT(r.snapshot.Get<PcieAerFacts>()->devices[0].note,
              HasSubstr("/sys/class/infiniband/mlx5_0/device/aer_dev_* absent"));
  EXPECT_THAT(r.text, Not(HasSubstr("rdma_pcie_aer_errors_total{")));

  const std::string fn = kFunction;
  t.Write(fn + "aer_dev_correctable", "RxErr 1\nTOTAL_ERR_COR 1\n");
  t.Write(fn + "aer_dev_nonfatal", "<script>alert(1)</script> 12x\n");     // not a count
  t.Write(fn + "aer_dev_fatal", "Receiver Error 1\nRxErr 1\nTOTAL_ERR_FATAL 1\n");  // one bit twice
  r = CollectOnce(*c, fs);
  ASSERT_EQ(r.outcome.errors.size(), 2u);
  EXPECT_THAT(r.outcome.errors[0], HasSubstr("mlx5_0: /sys/class/infiniband/mlx5_0/device/aer_dev_nonfatal: line 1"));
  EXPECT_THAT(r.outcome.errors[0], Not(HasSubstr("script")));  // the file's text is never echoed
  EXPECT_THAT(r.outcome.errors[1], HasSubstr("aer_dev_fatal: one error counted under its old and its new name"));
  EXPECT_THAT(r.text, HasSubstr("rdma_pcie_aer_errors_total{device=\"mlx5_0\",severity=\"correctable\",error=\"RxErr\"} 1\n"));
  EXPECT_THAT(r.text, Not(HasSubstr("severity=\"nonfatal\"")));
  EXPECT_THAT(r.text, Not(HasSubstr("severity=\"fatal\"")));
}

}  // namespace
}  // namespace rdmahd
