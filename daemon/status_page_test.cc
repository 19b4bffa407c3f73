#include "daemon/status_page.h"

#include <gtest/gtest.h>

#include <string>

#include "core/topology.h"
#include "facts/peer_facts.h"
#include "facts/rdma_device_facts.h"

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

}  // namespace
}  // namespace rdmahd
