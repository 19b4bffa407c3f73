#include "daemon/json_api.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/topology.h"
#include "facts/netdev_facts.h"
#include "facts/rdma_device_facts.h"
#include "facts/roce_facts.h"
#include "tests/support/big_node_report.h"

namespace rdmahd {
namespace {

// Two RoCE ports, one netdev with DCB read, one whose DCB could not be read; "unknown" is null.
Report TwoPorts() {
  Report r;
  Topology t;
  t.class_dir_present = true;
  for (int i = 0; i < 2; ++i) {
    TopologyDevice d;
    d.name = "mlx5_" + std::to_string(i);
    TopologyPort p;
    p.port = 1;
    p.link_layer = "Ethernet";
    d.ports.push_back(p);
    t.devices.push_back(d);
    t.links.push_back({d.name, 1, "ens" + std::to_string(i)});
  }
  r.snapshot.Put(t);
  RdmaDevicesFacts devices;
  RdmaDeviceFacts d0;
  d0.name = "mlx5_0";
  d0.fw_ver = "22.39.1002";
  RdmaPortFacts p0;
  p0.device = "mlx5_0";
  p0.port = 1;
  p0.state = SysfsEnumValue{4, "ACTIVE"};
  p0.rate_bytes_per_second = 12'500'000'000;
  d0.ports.push_back(p0);
  devices.devices.push_back(d0);  // mlx5_1 could not be read
  r.snapshot.Put(devices);
  RoceQosFacts qos;
  RoceNetdevFacts q0;
  q0.netdev = "ens0";
  q0.trust = TrustMode::kDscp;
  DcbState dcb;
  dcb.pfc = PfcConfig{};
  dcb.pfc->enabled_mask = 0b00001000;
  q0.dcb = std::make_shared<const DcbState>(dcb);
  q0.ecn_rp.present = true;
  q0.ecn_rp.enabled[3] = true;
  q0.ecn_rp.enabled[4] = false;
  RoceNetdevFacts q1;
  q1.netdev = "ens1";
  q1.dcb_note = "not captured";
  qos.netdevs = {q0, q1};
  r.snapshot.Put(qos);
  return r;
}

TEST(JsonApiTest, DevicesJoinsTopologyFactsAndQosWithNullForUnknown) {
  auto j = nlohmann::json::parse(DevicesDocument(TwoPorts()));
  EXPECT_EQ(j["schema_version"], kJsonSchemaVersion);
  EXPECT_TRUE(j["devices_known"]);
  EXPECT_TRUE(j["qos_known"]);
  EXPECT_FALSE(j["netdevs_known"]);
  ASSERT_EQ(j["devices"].size(), 2u);
  const auto& port0 = j["devices"][0]["ports"][0];
  EXPECT_EQ(j["devices"][0]["fw_ver"], "22.39.1002");
  EXPECT_EQ(port0["state"], "ACTIVE");
  EXPECT_EQ(port0["rate_bytes_per_second"], 12'500'000'000ull);
  EXPECT_EQ(port0["netdevs"], nlohmann::json({"ens0"}));
  const auto& port1 = j["devices"][1]["ports"][0];
  EXPECT_TRUE(port1["state"].is_null());
  EXPECT_TRUE(port1["rate_bytes_per_second"].is_null());
  EXPECT_TRUE(j["devices"][1]["fw_ver"].is_null());
  EXPECT_EQ(port1["link_layer"], "Ethernet");
  ASSERT_EQ(j["netdevs"].size(), 2u);
  const auto& ens0 = j["netdevs"][0];
  EXPECT_EQ(ens0["ports"], nlohmann::json({"mlx5_0/1"}));
  EXPECT_EQ(ens0["pfc_priorities"], nlohmann::json({3}));
  EXPECT_EQ(ens0["trust"], "dscp");
  EXPECT_EQ(ens0["ecn_rp_priorities"], nlohmann::json({3}));
  EXPECT_TRUE(ens0["ecn_np_priorities"].is_null());  // no roce_np folder: unknown, not "off"
  EXPECT_TRUE(ens0["mtu"].is_null());                 // the netdev collector did not run
  const auto& ens1 = j["netdevs"][1];
  EXPECT_TRUE(ens1["pfc_priorities"].is_null());
  EXPECT_TRUE(ens1["trust"].is_null());
  EXPECT_EQ(ens1["dcb_note"], "not captured");
}

TEST(JsonApiTest, DocumentsAreAsciiWhateverTheNamesHold) {
  Report r = TwoPorts();
  Topology t = *r.snapshot.Get<Topology>();
  t.devices[0].name = "mlx5_\"\n\xff\xe2\x80\xae";
  r.snapshot.Put(t);
  r.verdicts.push_back({"port_active", "mlx5_\x01\xc0/1", Verdict::kFailed, "</script>", ""});
  for (const std::string& doc : {DevicesDocument(r), ChecksDocument(r, 1, {"\xfe"})}) {
    for (char c : doc) ASSERT_TRUE(static_cast<unsigned char>(c) < 0x80) << doc;
    EXPECT_TRUE(nlohmann::json::accept(doc)) << doc;
  }
  auto j = nlohmann::json::parse(DevicesDocument(r));
  EXPECT_EQ(j["devices"][0]["name"], "mlx5_\"\n\uFFFD\u202E");
}

// Filters select exactly the matching verdicts, in the unfiltered document's order, and page them;
// "page" says the totals; the rest of the document is the whole node's.
TEST(JsonApiTest, FiltersSelectExactlyTheMatchingVerdictsAndSayTheTotals) {
  const Report r = testing::BigNodeReport(300, 250);
  const auto all = nlohmann::json::parse(ChecksDocument(r, 1, {}));
  ASSERT_EQ(all["verdicts"].size(), 1500u);
  EXPECT_FALSE(all.contains("page"));  // the unfiltered document is check --output=json's

  auto filtered = [&](const VerdictFilter& f) { return nlohmann::json::parse(ChecksDocument(r, 1, {}, f)); };
  auto expected = [&](auto pred) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& v : all["verdicts"]) {
      if (pred(v)) out.push_back(v);
    }
    return out;
  };

  VerdictFilter bad;
  bad.statuses = {Verdict::kFailed, Verdict::kWarning};
  auto j = filtered(bad);
  ASSERT_EQ(j["verdicts"].size(), 1u);
  EXPECT_EQ(j["verdicts"][0]["subject"], "mlx5_250/1");
  EXPECT_EQ(j["page"], nlohmann::json({{"total", 1}, {"offset", 0}, {"limit", nullptr}, {"returned", 1}}));
  EXPECT_EQ(j["summary"], all["summary"]);
  EXPECT_EQ(j["exit_code"], 1);

  VerdictFilter device;
  device.device = "mlx5_25";
  j = filtered(device);
  EXPECT_EQ(j["verdicts"], expected([](const auto& v) {
              return v["subject"] == "mlx5_25" || v["subject"] == "mlx5_25/1" || v["subject"] == "ens25";
            }));
  EXPECT_EQ(j["verdicts"].size(), 5u);  // not mlx5_250's

  VerdictFilter check;
  check.check = "roce_ecn";
  check.statuses = {Verdict::kUnknown};
  check.offset = 290;
  check.limit = 50;
  j = filtered(check);
  nlohmann::json ecn = expected([](const auto& v) { return v["check"] == "roce_ecn" && v["status"] == "unknown"; });
  ASSERT_EQ(ecn.size(), 300u);
  EXPECT_EQ(j["verdicts"], nlohmann::json(std::vector<nlohmann::json>(ecn.begin() + 290, ecn.end())));
  EXPECT_EQ(j["page"], nlohmann::json({{"total", 300}, {"offset", 290}, {"limit", 50}, {"returned", 10}}));

  check.offset = 1000;  // past the end: nothing, the total still said
  j = filtered(check);
  EXPECT_TRUE(j["verdicts"].empty());
  EXPECT_EQ(j["page"]["total"], 300);
}

TEST(JsonApiTest, DevicesOfOneDeviceHaveItsNetdevsOnly) {
  const Report r = testing::BigNodeReport(30, -1);
  const auto j = nlohmann::json::parse(DevicesDocument(r, "mlx5_3"));
  ASSERT_EQ(j["devices"].size(), 1u);
  EXPECT_EQ(j["devices"][0]["name"], "mlx5_3");
  ASSERT_EQ(j["netdevs"].size(), 1u);
  EXPECT_EQ(j["netdevs"][0]["name"], "ens3");
  EXPECT_EQ(j["devices_known"], true);
}

}  // namespace
}  // namespace rdmahd
