#include "core/verdict_order.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/check.h"

namespace rdmahd {
namespace {

using ::testing::ElementsAre;

std::vector<std::string> Checks(const VerdictList& list, const std::vector<std::size_t>& order) {
  std::vector<std::string> out;
  for (std::size_t i : order) out.emplace_back(list[i].check);
  return out;
}

TEST(VerdictOrderTest, EveryRegisteredCheckHasACost) {
  for (const std::string& name : CheckRegistry().Names()) {
    EXPECT_TRUE(CheckCostKnown(name)) << name << " has no place in core/verdict_order.cc's table";
  }
}

TEST(VerdictOrderTest, TiersAreHardwareThenDegradingThenConfiguration) {
  EXPECT_EQ(CostOfCheck("nic_health"), CheckCost::kHardware);
  EXPECT_EQ(CostOfCheck("hardware_present"), CheckCost::kHardware);
  EXPECT_EQ(CostOfCheck("port_active"), CheckCost::kHardware);
  for (const char* c : {"port_errors", "netdev_errors", "roce_transport_errors", "module_health", "link_margin",
                        "pcie_aer", "link_flaps"}) {
    EXPECT_EQ(CostOfCheck(c), CheckCost::kDegrading) << c;
  }
  for (const char* c : {"roce_pfc_priority", "roce_ecn", "roce_tos", "roce_mtu", "roce_trust", "cpu_governor",
                        "memlock", "hugepages_free"}) {
    EXPECT_EQ(CostOfCheck(c), CheckCost::kConfiguration) << c;
  }
  // Every hardware check ranks before every degrading one, which rank before every configuration one.
  EXPECT_LT(CheckRank("port_active"), CheckRank("link_flaps"));
  EXPECT_LT(CheckRank("peer_bandwidth"), CheckRank("kernel_modules"));
  // A check the table does not name (a plug-in's) is degrading: after the named degrading ones,
  // before configuration.
  EXPECT_EQ(CostOfCheck("someone_elses_check"), CheckCost::kDegrading);
  EXPECT_GT(CheckRank("someone_elses_check"), CheckRank("peer_bandwidth"));
  EXPECT_LT(CheckRank("someone_elses_check"), CheckRank("kernel_modules"));
}

TEST(VerdictOrderTest, FailedByCostThenWarningThenUnknownThenOk) {
  // As the engine lists them: by check name.
  const VerdictList list{
      {"cpu_governor", "mlx5_0", Verdict::kWarning, "powersave", "cpupower"},
      {"hardware_present", "mlx5_1", Verdict::kFailed, "gone", "reseat"},
      {"module_health", "ens1f0", Verdict::kWarning, "rx power low", "clean"},
      {"nic_health", "mlx5_0", Verdict::kFailed, "Fatal error 1", "reset"},
      {"port_active", "mlx5_0/1", Verdict::kOk, "ACTIVE", ""},
      {"port_errors", "mlx5_0/1", Verdict::kFailed, "symbol_error +200 in 60 s", "cable"},
      {"roce_ecn", "ens1f0", Verdict::kUnknown, "no ecn folder", ""},
      {"roce_pfc_priority", "ens1f0", Verdict::kFailed, "PFC off", "dcb"},
      {"roce_tos", "mlx5_0/1", Verdict::kFailed, "ToS 0", "echo"},
      {"zz_plugin", "x", Verdict::kFailed, "plug-in says so", ""},
  };
  EXPECT_THAT(Checks(list, OrderVerdicts(list)),
              ElementsAre("nic_health", "hardware_present", "port_errors", "zz_plugin", "roce_pfc_priority", "roce_tos",
                          "module_health", "cpu_governor", "roce_ecn", "port_active"));
}

TEST(VerdictOrderTest, ACheckKeepsItsSubjectsInTheOrderItGaveThem) {
  const VerdictList list{
      {"port_active", "mlx5_3/1", Verdict::kFailed, "DOWN", ""},
      {"port_active", "mlx5_0/1", Verdict::kFailed, "DOWN (Polling)", ""},
      {"port_active", "mlx5_1/1", Verdict::kFailed, "DOWN", ""},
  };
  EXPECT_THAT(OrderVerdicts(list), ElementsAre(0, 1, 2));
}

TEST(VerdictOrderTest, PlaceholdersReplaceWholeNamesOnly) {
  EXPECT_EQ(WithSubjectPlaceholders("mkdir -p /sys/kernel/config/rdma_cm/mlx5_1 && echo 106 > "
                                    "/sys/kernel/config/rdma_cm/mlx5_1/ports/1/default_roce_tos on mlx5_1/1",
                                    "mlx5_1/1"),
            "mkdir -p /sys/kernel/config/rdma_cm/<device> && echo 106 > "
            "/sys/kernel/config/rdma_cm/<device>/ports/1/default_roce_tos on <port>");
  // mlx5_1 inside mlx5_10 is another device.
  EXPECT_EQ(WithSubjectPlaceholders("mlx5_10 and mlx5_1", "mlx5_1/1"), "mlx5_10 and <device>");
  EXPECT_EQ(WithSubjectPlaceholders("ethtool -A ens1f0np0 rx off", "ens1f0np0"), "ethtool -A <subject> rx off");
  EXPECT_EQ(WithSubjectPlaceholders("rm /dev/infiniband/uverbs1 && modprobe ib_uverbs", "/dev/infiniband/uverbs1"),
            "rm <subject> && modprobe ib_uverbs");
  EXPECT_EQ(WithSubjectPlaceholders("on p1 and p1x", "p1"), "on p1 and p1x");  // too short to replace
}

TEST(VerdictOrderTest, IdenticalVerdictsOfOneCheckAreOneGroupNamingEverySubject) {
  auto tos = [](const std::string& dev) {
    return CheckResult{"roce_tos", dev + "/1", Verdict::kFailed,
                       "default ToS 0 (kernel default) = DSCP 0, policy DSCP is 26: rdma_cm traffic is not marked",
                       "mkdir -p /sys/kernel/config/rdma_cm/" + dev + " && echo 106 > /sys/kernel/config/rdma_cm/" +
                           dev + "/ports/1/default_roce_tos"};
  };
  VerdictList list;
  for (const char* dev : {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"}) list.push_back(tos(dev));
  // Another reason: its own row.
  list.push_back({"roce_tos", "mlx5_4/1", Verdict::kFailed, "default ToS 106 = DSCP 26 maps to priority 0", "dcb app"});
  // The same words, another status: its own row.
  list.push_back({"roce_tos", "mlx5_5/1", Verdict::kOk, "default ToS 0 (kernel default) = DSCP 0", ""});
  list.push_back({"roce_tos", "mlx5_6/1", Verdict::kOk, "default ToS 0 (kernel default) = DSCP 0", ""});
  list.push_back({"roce_ecn", "ens1f0", Verdict::kUnknown, "no /sys/class/net/ens1f0/ecn", ""});
  list.push_back({"roce_ecn", "ens1f1", Verdict::kUnknown, "no /sys/class/net/ens1f1/ecn", ""});
  list.push_back({"port_active", "mlx5_0/1", Verdict::kFailed, "DOWN", "cable"});

  const std::vector<VerdictGroup> groups = GroupVerdicts(list);
  ASSERT_EQ(groups.size(), 5u);
  EXPECT_EQ(groups[0].check, "port_active");  // hardware first
  const VerdictGroup& four = groups[1];
  EXPECT_EQ(four.check, "roce_tos");
  EXPECT_EQ(four.verdict, Verdict::kFailed);
  EXPECT_THAT(four.subjects, ElementsAre("mlx5_0/1", "mlx5_1/1", "mlx5_2/1", "mlx5_3/1"));
  EXPECT_THAT(four.members, ElementsAre(0, 1, 2, 3));
  // The reason is word for word the same: as it is. The fix names each device: a placeholder.
  EXPECT_EQ(four.reason, list[0].reason);
  EXPECT_EQ(four.fix, "mkdir -p /sys/kernel/config/rdma_cm/<device> && echo 106 > "
                      "/sys/kernel/config/rdma_cm/<device>/ports/1/default_roce_tos");
  EXPECT_THAT(groups[2].subjects, ElementsAre("mlx5_4/1"));
  EXPECT_EQ(groups[2].reason, "default ToS 106 = DSCP 26 maps to priority 0");  // one member: as it is
  EXPECT_EQ(groups[3].verdict, Verdict::kUnknown);
  EXPECT_THAT(groups[3].subjects, ElementsAre("ens1f0", "ens1f1"));
  EXPECT_EQ(groups[3].reason, "no /sys/class/net/<subject>/ecn");
  EXPECT_EQ(groups[4].verdict, Verdict::kOk);
  EXPECT_THAT(groups[4].subjects, ElementsAre("mlx5_5/1", "mlx5_6/1"));
}

TEST(VerdictOrderTest, DifferentFixesAreNotGrouped) {
  const VerdictList list{
      {"device_access", "/dev/infiniband/uverbs0", Verdict::kFailed, "/dev/infiniband/uverbs0 is not a character device",
       "rm /dev/infiniband/uverbs0 && modprobe -r ib_uverbs && modprobe ib_uverbs"},
      {"device_access", "/dev/infiniband/uverbs1", Verdict::kFailed, "/dev/infiniband/uverbs1 is not a character device",
       "rm /dev/infiniband/uverbs1 && modprobe -r ib_uverbs && modprobe ib_uverbs"},
      {"device_access", "/dev/infiniband/rdma_cm", Verdict::kFailed, "/dev/infiniband/rdma_cm is not a character device",
       "rm /dev/infiniband/rdma_cm && modprobe -r rdma_ucm && modprobe rdma_ucm"},
  };
  const std::vector<VerdictGroup> groups = GroupVerdicts(list);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_THAT(groups[0].subjects, ElementsAre("/dev/infiniband/uverbs0", "/dev/infiniband/uverbs1"));
  EXPECT_EQ(groups[0].reason, "<subject> is not a character device");
  EXPECT_EQ(groups[0].fix, "rm <subject> && modprobe -r ib_uverbs && modprobe ib_uverbs");
  EXPECT_THAT(groups[1].subjects, ElementsAre("/dev/infiniband/rdma_cm"));
  EXPECT_EQ(groups[1].fix, "rm /dev/infiniband/rdma_cm && modprobe -r rdma_ucm && modprobe rdma_ucm");
}

}  // namespace
}  // namespace rdmahd
