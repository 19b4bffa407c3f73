#include "daemon/status_page.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/topology.h"
#include "facts/peer_facts.h"
#include "facts/rdma_device_facts.h"
#include "tests/support/big_node_report.h"

namespace rdmahd {
namespace {

TEST(HtmlTextTest, NothingCanOpenATagOrLeaveAnAttribute) {
  EXPECT_EQ(HtmlText("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
  // Controls, bidi controls and ill-formed UTF-8 show as visible escapes (TerminalText), valid UTF-8.
  EXPECT_EQ(HtmlText("x\x01\n\xff\xe2\x80\xae" "y"), "x\\x01\\n\\xff\\u202ey");
  EXPECT_EQ(HtmlText("16.35 \xc2\xb5s"), "16.35 \xc2\xb5s");
}

Report MixedReport() {
  Report r;
  r.verdicts.push_back({"a_ok", "mlx5_0/1", Verdict::kOk, "fine", ""});
  r.verdicts.push_back({"b_warn", "ens1", Verdict::kWarning, "pauses", "ethtool -S ens1"});
  r.verdicts.push_back({"c_unknown", "ens2", Verdict::kUnknown, "no ecn folder", ""});
  r.verdicts.push_back({"d_failed", "mlx5_<script>alert(1)</script>/1", Verdict::kFailed, "DOWN \"x\"",
                        "rdma link set <x>"});
  Topology t;
  t.class_dir_present = true;
  TopologyDevice d;
  d.name = "mlx5_\"<i>";
  TopologyPort p;
  p.port = 1;
  p.link_layer = "Ethernet";
  d.ports.push_back(p);
  t.devices.push_back(d);
  r.snapshot.Put(t);
  RdmaDevicesFacts facts;
  RdmaDeviceFacts df;
  df.name = d.name;
  RdmaPortFacts pf;
  pf.device = d.name;
  pf.port = 1;
  pf.state = SysfsEnumValue{4, "ACTIVE"};
  pf.rate_bytes_per_second = 12'500'000'000;
  df.ports.push_back(pf);
  facts.devices.push_back(df);
  r.snapshot.Put(facts);
  PeerFacts peers;
  auto peer = std::make_shared<PeerStatus>();
  peer->name = "node-b";
  peer->address = "10.0.0.2";
  peer->last_latency = PeerProbeResult::kSuccess;
  peer->latency = PeerLatencyRound{1.5, 2.31, 2.5, 7.69, 9, 12, 999, "steady", ""};
  peers.peers.push_back(peer);
  r.snapshot.Put(peers);
  CollectorOutcome bad;
  bad.collector = "netdev";
  bad.errors.push_back("open /sys/class/net/<b>: Permission denied");
  r.snapshot.outcomes.push_back(bad);
  return r;
}

TEST(StatusPageTest, WorstFirstOkFoldedEverythingEscaped) {
  DaemonStatus status;
  status.version = "0.1.0";
  status.hostname = "node<1>";
  status.uptime_seconds = 93784;
  status.collectors = {{"devices", "RDMA devices", true}, {"pcie", "PCIe links", false}};
  const std::string page = RenderStatusPage(MixedReport(), {}, status);
  const auto failed = page.find("d_failed"), warned = page.find("b_warn"), unknown = page.find("c_unknown"),
             ok = page.find("a_ok"), details = page.find("<details id=\"ok\">");
  ASSERT_NE(failed, std::string::npos);
  EXPECT_LT(failed, warned);
  EXPECT_LT(warned, unknown);
  EXPECT_LT(unknown, details);
  EXPECT_LT(details, ok);
  EXPECT_NE(page.find("Unhealthy: 1 failed, 1 warning"), std::string::npos);
  EXPECT_NE(page.find("<code>rdma link set &lt;x&gt;</code>"), std::string::npos);
  EXPECT_NE(page.find("mlx5_&lt;script&gt;alert(1)&lt;/script&gt;/1"), std::string::npos);
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_EQ(page.find("<i>"), std::string::npos);
  EXPECT_EQ(page.find("node<1>"), std::string::npos);
  EXPECT_NE(page.find("mlx5_&quot;&lt;i&gt;/1"), std::string::npos);
  EXPECT_NE(page.find("100 Gb/s"), std::string::npos);
  // Peers: median and p99; the daemon: uptime, a failing collector with its error, a disabled one.
  EXPECT_NE(page.find("<td>2.3</td><td>7.7</td>"), std::string::npos) << page;
  EXPECT_NE(page.find("1d 2h 3m 4s"), std::string::npos);
  EXPECT_NE(page.find("<b>netdev</b>: open /sys/class/net/&lt;b&gt;: Permission denied"), std::string::npos);
  EXPECT_NE(page.find("pcie (disabled)"), std::string::npos);
  EXPECT_NE(page.find("href=\"/metrics\""), std::string::npos);
}

TEST(StatusPageTest, NoVerdictsAndAProblemIsCannotJudge) {
  Report r;
  const std::string page = RenderStatusPage(r, {"/x/class/infiniband does not exist"}, DaemonStatus{});
  EXPECT_NE(page.find("Cannot judge this node: /x/class/infiniband does not exist"), std::string::npos);
  EXPECT_NE(page.find("class=\"verdict v-unknown\">Cannot judge this node &middot;"), std::string::npos);
}

// The rows of the table `id`, each as "status check subjects".
std::vector<std::string> Rows(const std::string& page, const std::string& id) {
  std::vector<std::string> rows;
  std::string attribute = "id=\"";
  attribute.append(id).append("\"");
  const std::size_t table = page.find(attribute);
  if (table == std::string::npos) return rows;
  const std::size_t end = page.find("</table>", table);
  for (std::size_t at = page.find("<tr class=\"verdict-row\"", table); at < end;
       at = page.find("<tr class=\"verdict-row\"", at + 1)) {
    std::string row;
    std::size_t cell = at;
    for (int i = 0; i < 3; ++i) {
      cell = page.find("<td", cell);
      const std::size_t open = page.find('>', cell) + 1;
      cell = page.find("</td>", open);
      if (i > 0) row += ' ';
      row.append(page, open, cell - open);
    }
    rows.push_back(row);
  }
  return rows;
}

TEST(StatusPageTest, FailedByCostThenWarningIdenticalVerdictsOnOneRowUnknownAndOkFolded) {
  Report r;
  // As the engine lists them: by check name.
  r.verdicts.push_back({"cpu_governor", "mlx5_0", Verdict::kWarning, "powersave", "cpupower frequency-set -g performance"});
  r.verdicts.push_back({"hardware_present", "mlx5_3", Verdict::kFailed, "gone since 12:00", "reseat the NIC"});
  r.verdicts.push_back({"module_health", "ens1f0", Verdict::kFailed, "rx power -14 dBm", "clean the fiber"});
  r.verdicts.push_back({"nic_health", "mlx5_2", Verdict::kFailed, "Fatal error 1 detected", "devlink dev reload"});
  r.verdicts.push_back({"port_active", "mlx5_0/1", Verdict::kOk, "ACTIVE", ""});
  r.verdicts.push_back({"port_active", "mlx5_1/1", Verdict::kOk, "ACTIVE", ""});
  r.verdicts.push_back({"roce_ecn", "ens1f0", Verdict::kUnknown, "no /sys/class/net/ens1f0/ecn", ""});
  r.verdicts.push_back({"roce_pfc_priority", "ens1f0", Verdict::kFailed, "PFC off on 3", "dcb pfc set dev ens1f0 prio-pfc 3:on"});
  for (const char* dev : {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"}) {
    r.verdicts.push_back({"roce_tos", std::string(dev) + "/1", Verdict::kFailed, "default ToS 0 = DSCP 0, policy DSCP is 26",
                          std::string("mkdir -p /sys/kernel/config/rdma_cm/") + dev});
  }
  const std::string page = RenderStatusPage(r, {}, DaemonStatus{});
  EXPECT_EQ(Rows(page, "t-problems"),
            (std::vector<std::string>{"failed nic_health mlx5_2", "failed hardware_present mlx5_3",
                                      "failed module_health ens1f0", "failed roce_pfc_priority ens1f0",
                                      "failed roce_tos mlx5_0/1, mlx5_1/1, mlx5_2/1, mlx5_3/1",
                                      "warning cpu_governor mlx5_0"}));
  // The group's fix names each port's device as a placeholder; paths may break after a '/' only.
  EXPECT_NE(page.find("<code>mkdir -p /<wbr>sys/<wbr>kernel/<wbr>config/<wbr>rdma_cm/<wbr>&lt;device&gt;</code>"),
            std::string::npos) << page;
  EXPECT_NE(page.find("data-cost=\"hardware\" data-subjects=\"1\""), std::string::npos);
  EXPECT_NE(page.find("data-cost=\"configuration\" data-subjects=\"4\""), std::string::npos);
  // Headline counts verdicts, not rows; unknown and ok are folded and counted.
  EXPECT_NE(page.find("Unhealthy: 8 failed, 1 warning &middot; 2 ok, 1 unknown"), std::string::npos) << page;
  EXPECT_NE(page.find("<details id=\"unknown\"><summary>1 unknown (could not be judged)</summary>"), std::string::npos);
  EXPECT_NE(page.find("<details id=\"ok\"><summary>2 checks ok</summary>"), std::string::npos);
  EXPECT_EQ(Rows(page, "t-ok"), (std::vector<std::string>{"ok port_active mlx5_0/1, mlx5_1/1"}));
  EXPECT_EQ(Rows(page, "t-unknown"), (std::vector<std::string>{"unknown roce_ecn ens1f0"}));
  // A short word keeps its '/' unbroken ("GT/s").
  Report link;
  link.verdicts.push_back({"pcie_link", "mlx5_0", Verdict::kFailed, "trained at 8.0 GT/s x8", "reseat it"});
  EXPECT_NE(RenderStatusPage(link, {}, DaemonStatus{}).find(">trained at 8.0 GT/s x8</td>"), std::string::npos);
  // A long fix wraps between words: no rule that breaks inside one.
  EXPECT_EQ(page.find("overflow-wrap:anywhere}\ncode"), std::string::npos);
  EXPECT_EQ(page.find("break-all"), std::string::npos);
  EXPECT_NE(page.find("code{font:13px/1.3 ui-monospace,monospace;background:#f0f0ec;padding:1px 3px;"
                      "overflow-wrap:break-word;word-break:normal}"),
            std::string::npos);
}

std::size_t Count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

StatusPageView View(const std::vector<QueryArgument>& query) {
  Result<StatusPageView> v = ParseStatusPageQuery(query);
  EXPECT_TRUE(v.ok()) << v.error().message;
  return v.ok() ? *v : StatusPageView{};
}

// 300 devices, 1,500 verdicts: the page stays small, lists no ok or unknown verdict row by row but
// counts them per check (each count a link to its list), and still shows the one failed verdict
// and its device.
TEST(StatusPageBigNodeTest, PageIsBoundedOkAndUnknownCountedPerCheck) {
  const Report r = testing::BigNodeReport(300, 250);
  const std::string page = RenderStatusPage(r, {}, DaemonStatus{});
  EXPECT_LT(page.size(), 24u * 1024) << page.size();
  EXPECT_EQ(Count(page, "data-status=\"ok\""), 0u);
  EXPECT_EQ(Count(page, "data-status=\"unknown\""), 0u);
  EXPECT_EQ(page.find("id=\"t-ok\""), std::string::npos);
  EXPECT_NE(page.find("Unhealthy: 1 failed, 0 warning &middot; 899 ok, 600 unknown"), std::string::npos);
  EXPECT_NE(page.find("<a href=\"/?status=ok&amp;check=port_errors\">300</a>"), std::string::npos) << page;
  EXPECT_NE(page.find("<a href=\"/?status=ok&amp;check=port_active\">299</a>"), std::string::npos);
  EXPECT_NE(page.find("<a href=\"/?status=unknown&amp;check=pcie_link\">300</a>"), std::string::npos);
  // The failed verdict, and its device in the ports table (the only one: the rest are a link away).
  const auto problems = page.find("id=\"t-problems\"");
  ASSERT_NE(problems, std::string::npos);
  EXPECT_NE(page.find("mlx5_250/1", problems), std::string::npos);
  EXPECT_NE(page.find("300 devices; 1 with a failed or warning verdict, shown."), std::string::npos) << page;
  EXPECT_NE(page.find("<a href=\"/?device=mlx5_250\">mlx5_250/1</a>"), std::string::npos);
  EXPECT_NE(page.find("<a href=\"/?view=devices\">"), std::string::npos);
  EXPECT_EQ(Count(page, "?device="), 1u);
  EXPECT_NE(page.find("<td>ens250</td>"), std::string::npos);  // its netdev
  EXPECT_EQ(page.find("<td>ens251</td>"), std::string::npos);
}

TEST(StatusPageBigNodeTest, ADeviceShowsItsVerdictsOfEveryStatusPortsAndNetdevs) {
  const Report r = testing::BigNodeReport(300, 250);
  const std::string page = RenderStatusPage(r, {}, DaemonStatus{}, View({{"device", "mlx5_25"}}));
  EXPECT_NE(page.find("<h2 id=\"device\">Device mlx5_25</h2>"), std::string::npos);
  EXPECT_NE(page.find("0 failed, 0 warning, 2 unknown, 3 ok verdicts"), std::string::npos) << page;
  EXPECT_EQ(Count(page, "data-status=\"ok\""), 3u);
  EXPECT_EQ(Count(page, "data-status=\"unknown\""), 2u);
  for (const char* s : {"<td data-label=\"subject\">mlx5_25/1</td>", "<td data-label=\"subject\">ens25</td>",
                        "<td data-label=\"subject\">mlx5_25</td>", "<td>ens25</td>"}) {
    EXPECT_NE(page.find(s), std::string::npos) << s;
  }
  EXPECT_EQ(page.find("mlx5_250"), std::string::npos);  // a longer name is another device
  EXPECT_EQ(page.find("ens250"), std::string::npos);
}

// 450 failed rows that do not group: `/` shows 200 and links to the rest; the list pages them.
TEST(StatusPageBigNodeTest, FailedRowsPastTheBoundAreALinkAwayAndPaged) {
  Report r = testing::BigNodeReport(10, -1);
  for (int i = 0; i < 450; ++i) {
    r.verdicts.push_back({"port_errors", "mlx5_0/1", Verdict::kFailed, std::to_string(i) + " symbol errors", ""});
  }
  const std::string page = RenderStatusPage(r, {}, DaemonStatus{});
  EXPECT_EQ(Count(page, "data-status=\"failed\""), kPageProblemRows);
  EXPECT_NE(page.find("250 more failed and warning rows: <a href=\"/?status=failed,warning&amp;offset=200\">"),
            std::string::npos);
  const std::string list =
      RenderStatusPage(r, {}, DaemonStatus{}, View({{"status", "failed,warning"}, {"offset", "200"}}));
  EXPECT_EQ(Count(list, "data-status=\"failed\""), 200u);
  EXPECT_NE(list.find("rows 201-400 of 450"), std::string::npos);
  EXPECT_NE(list.find("<a href=\"/?status=failed,warning&amp;offset=400\">next</a>"), std::string::npos) << list;
  EXPECT_NE(list.find("<a href=\"/?status=failed,warning&amp;offset=0\">previous</a>"), std::string::npos);
  const std::string last = RenderStatusPage(r, {}, DaemonStatus{},
                                            View({{"status", "failed"}, {"offset", "400"}, {"limit", "100"}}));
  EXPECT_EQ(Count(last, "data-status=\"failed\""), 50u);
  EXPECT_EQ(last.find(">next</a>"), std::string::npos);
  // The ok verdicts of one check, listed.
  const std::string ok = RenderStatusPage(r, {}, DaemonStatus{}, View({{"status", "ok"}, {"check", "roce_mtu"}}));
  EXPECT_NE(ok.find("Verdicts: ok · check roce_mtu"), std::string::npos);
  EXPECT_EQ(Count(ok, "data-status=\"ok\""), 1u);  // ten netdevs, one reason: one row
  EXPECT_NE(ok.find("ens0, ens1, ens2"), std::string::npos);
}

// One check failing the same way on every port is one row; on `/` it names 50 ports and links to
// the list, where the row names them all.
TEST(StatusPageBigNodeTest, ARowOfManySubjectsNamesFiftyOnThePage) {
  Report r = testing::BigNodeReport(300, -1);
  for (int i = 0; i < 300; ++i) {
    r.verdicts.push_back({"roce_tos", "mlx5_" + std::to_string(i) + "/1", Verdict::kFailed, "ToS 0", ""});
  }
  const std::string page = RenderStatusPage(r, {}, DaemonStatus{});
  EXPECT_EQ(Count(page, "data-status=\"failed\""), 1u);
  EXPECT_NE(page.find("mlx5_49/1, <a href=\"/?status=failed&amp;check=roce_tos\">and 250 more</a>"), std::string::npos)
      << page;
  const auto table = page.find("id=\"t-problems\""), end = page.find("</table>", table);
  EXPECT_EQ(page.substr(table, end - table).find("mlx5_50/1"), std::string::npos);
  const std::string list = RenderStatusPage(r, {}, DaemonStatus{}, View({{"status", "failed"}, {"check", "roce_tos"}}));
  EXPECT_NE(list.find("mlx5_298/1, mlx5_299/1</td>"), std::string::npos);
}

TEST(StatusPageBigNodeTest, DevicesArePagedAHundredAtATime) {
  const Report r = testing::BigNodeReport(250, -1);
  const std::string page = RenderStatusPage(r, {}, DaemonStatus{}, View({{"view", "devices"}, {"offset", "200"}}));
  EXPECT_EQ(Count(page, "?device="), 50u);
  EXPECT_NE(page.find("devices 201-250 of 250"), std::string::npos);
  EXPECT_NE(page.find("<a href=\"/?view=devices&amp;offset=100\">previous</a>"), std::string::npos);
}

// Every bad parameter is named, and nothing of the request can reach the page as markup.
TEST(StatusPageBigNodeTest, BadParametersAreNamedNeverReflected) {
  const std::vector<std::vector<QueryArgument>> bad = {
      {{"<script>alert(1)</script>", "1"}},
      {{"status", "<script>"}},
      {{"limit", "<b>"}},
      {{"offset", "-1"}},
      {{"view", "<i>"}},
      {{"view", "devices"}, {"status", "ok"}},
      {{"device", "a"}, {"device", "b"}},
      {{"device", ""}},
  };
  for (const auto& q : bad) {
    Result<StatusPageView> v = ParseStatusPageQuery(q);
    ASSERT_FALSE(v.ok()) << q[0].name;
    EXPECT_EQ(v.error().message.find('<'), std::string::npos) << v.error().message;
    EXPECT_EQ(v.error().message.find('>'), std::string::npos) << v.error().message;
    EXPECT_TRUE(v.error().message.find("parameter") != std::string::npos) << v.error().message;
  }
  EXPECT_EQ(ParseStatusPageQuery({{"<x>", "1"}}).error().message.rfind("unknown parameter \"\\x3cx\\x3e\"", 0), 0u);
  EXPECT_EQ(View({}).kind, StatusPageView::Kind::kSummary);
  EXPECT_EQ(View({{"device", "mlx5_0"}}).kind, StatusPageView::Kind::kDevice);
  EXPECT_EQ(View({{"device", "mlx5_0"}, {"status", "ok"}}).kind, StatusPageView::Kind::kVerdicts);
  // A device name is escaped wherever it shows, and its links percent-encoded.
  Report r = testing::BigNodeReport(1, -1);
  Topology t = *r.snapshot.Get<Topology>();
  t.devices[0].name = "x\"<b>&";
  r.snapshot.Put(t);
  const std::string page = RenderStatusPage(r, {}, DaemonStatus{}, View({{"device", "x\"<b>&"}}));
  EXPECT_EQ(page.find("<b>"), std::string::npos);
  EXPECT_NE(page.find("Device x&quot;&lt;b&gt;&amp;</h2>"), std::string::npos);
  EXPECT_NE(page.find("href=\"/?device=x%22%3Cb%3E%26\""), std::string::npos) << page;
}

}  // namespace
}  // namespace rdmahd
