#include "daemon/status_page.h"

#include <time.h>

#include <cmath>
#include <cstdio>

#include "common/duration_text.h"
#include "common/excerpt.h"
#include "core/verdict_order.h"
#include "daemon/node_summary.h"
#include "facts/peer_facts.h"

namespace rdmahd {
namespace {

// Phones first: one column that tables scroll inside; wider screens get room. Colours carry no
// meaning alone: every status is also written out.
constexpr const char* kStyle = R"css(
body{font:15px/1.4 system-ui,sans-serif;margin:0;color:#1b1b1b;background:#f6f6f4}
main{max-width:1280px;margin:0 auto;padding:12px}
h1{font-size:1.3em;margin:.2em 0;overflow-wrap:anywhere}h2{font-size:1.1em;margin:1.2em 0 .4em}
nav{display:flex;flex-wrap:wrap;gap:.2em 1.2em}
p,li,dd{overflow-wrap:anywhere}
.verdict{padding:8px 12px;border-radius:6px;font-weight:600;margin:.6em 0}
.v-failed{background:#fbe0e0;border-left:6px solid #b00020}
.v-warning{background:#fff3d6;border-left:6px solid #b06a00}
.v-unknown{background:#e8e8f0;border-left:6px solid #5a5a7a}
.v-ok{background:#e2f3e4;border-left:6px solid #1e7b34}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%;background:#fff}
table.wide{min-width:720px}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #ddd;vertical-align:top;overflow-wrap:break-word}
table.verdicts td{word-break:normal;overflow-wrap:break-word}
th{background:#ecece8;font-weight:600}
.s-failed{color:#b00020;font-weight:700}.s-warning{color:#b06a00;font-weight:700}
.s-unknown{color:#5a5a7a;font-weight:700}.s-ok{color:#1e7b34}
code{font:13px/1.3 ui-monospace,monospace;background:#f0f0ec;padding:1px 3px;overflow-wrap:break-word;word-break:normal}
details{margin:.6em 0}summary{cursor:pointer;font-weight:600}
dl{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:2px 12px;margin:0}dt{font-weight:600}dd{margin:0}
footer{color:#666;font-size:.9em;margin-top:2em}
@media (max-width:720px){
table.cards,table.cards tbody,table.cards tr,table.cards td{display:block}
table.cards thead{display:none}
table.cards tr{border:1px solid #ddd;border-radius:6px;margin:.5em 0}
table.cards td{border:0;padding:2px 8px;overflow-wrap:break-word;word-break:normal}
table.cards td[data-label]::before{content:attr(data-label) ": ";font-weight:600;color:#555}
}
)css";

// `label` names the column where a phone shows the table as cards (data-label, CSS ::before).
void Cell(std::string& out, std::string_view text, std::string_view cls = {}, std::string_view label = {}) {
  out += "<td";
  if (!cls.empty()) out += " class=\"" + std::string(cls) + "\"";
  if (!label.empty()) out += " data-label=\"" + std::string(label) + "\"";
  out += ">" + HtmlText(text) + "</td>";
}

std::string OrUnknown(const std::optional<std::string>& v) { return v ? *v : "unknown"; }

std::string Priorities(const std::optional<std::vector<int>>& v) {
  if (!v) return "unknown";
  if (v->empty()) return "none";
  std::string s;
  for (int p : *v) {
    if (!s.empty()) s += ',';
    s += std::to_string(p);
  }
  return s;
}

std::string Rate(const std::optional<std::uint64_t>& bytes_per_second) {
  if (!bytes_per_second) return "unknown";
  char text[32];
  std::snprintf(text, sizeof text, "%g Gb/s", static_cast<double>(*bytes_per_second) * 8 / 1e9);
  return text;
}

std::string Microseconds(double us) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", us);
  return text;
}

std::string UtcTime(double unix_seconds) {
  if (unix_seconds <= 0) return "never";
  time_t t = static_cast<time_t>(unix_seconds);
  tm parts{};
  gmtime_r(&t, &parts);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &parts);
  return text;
}

// `text` as HTML (HtmlText) where a long path or command wraps on a phone at its separators as
// well as its spaces, never inside a word: a line break allowed (<wbr>) after each '/' of a word
// longer than kLongWord characters ("/sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos"),
// none in a short one ("GT/s").
constexpr std::size_t kLongWord = 24;

std::string WrappableHtml(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  while (!text.empty()) {
    const std::size_t space = text.find(' ');
    const std::string_view word = text.substr(0, space);
    const std::string html = HtmlText(word);
    if (word.size() <= kLongWord) {
      out += html;
    } else {
      for (char c : html) {
        out += c;
        if (c == '/') out += "<wbr>";
      }
    }
    if (space == std::string_view::npos) break;
    out += ' ';
    text.remove_prefix(space + 1);
  }
  return out;
}

std::string JoinSubjects(const std::vector<std::string>& subjects) {
  std::string out;
  for (const std::string& s : subjects) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// One row per group (core/verdict_order.h): its subjects named together.
void VerdictTable(std::string& out, std::string_view id, const std::vector<const VerdictGroup*>& groups,
                  bool with_fix) {
  out += "<div class=\"scroll\"><table class=\"cards verdicts\" id=\"" + std::string(id) +
         "\"><thead><tr><th>status</th><th>check</th><th>subject</th><th>reason</th>";
  if (with_fix) out += "<th>fix</th>";
  out += "</tr></thead><tbody>\n";
  for (const VerdictGroup* g : groups) {
    const std::string status(VerdictName(g->verdict));
    out += "<tr class=\"verdict-row\" data-status=\"" + status + "\" data-cost=\"" +
           std::string(CheckCostName(CostOfCheck(g->check))) + "\" data-subjects=\"" +
           std::to_string(g->subjects.size()) + "\">";
    Cell(out, status, "s-" + status);
    Cell(out, g->check, {}, "check");
    Cell(out, JoinSubjects(g->subjects), {}, g->subjects.size() == 1 ? "subject" : "subjects");
    out += "<td data-label=\"reason\">" + WrappableHtml(g->reason) + "</td>";
    if (with_fix && !g->fix.empty()) out += "<td data-label=\"fix\"><code>" + WrappableHtml(g->fix) + "</code></td>";
    if (with_fix && g->fix.empty()) out += "<td></td>";
    out += "</tr>\n";
  }
  out += "</tbody></table></div>\n";
}

void Verdicts(std::string& out, const Report& report, const std::vector<std::string>& problems) {
  // Worst first, by what it costs; identical verdicts of several subjects as one row.
  const std::vector<VerdictGroup> groups = GroupVerdicts(report.verdicts);
  std::vector<const VerdictGroup*> bad, unknown, ok;
  std::size_t failed = 0, warned = 0, unknowns = 0, oks = 0;
  for (const VerdictGroup& g : groups) {
    switch (g.verdict) {
      case Verdict::kFailed: bad.push_back(&g); failed += g.members.size(); break;
      case Verdict::kWarning: bad.push_back(&g); warned += g.members.size(); break;
      case Verdict::kUnknown: unknown.push_back(&g); unknowns += g.members.size(); break;
      case Verdict::kOk: ok.push_back(&g); oks += g.members.size(); break;
    }
  }
  std::string cls = "v-ok", headline = "Healthy: every check that could judge is ok";
  if (failed > 0) {
    cls = "v-failed";
    headline = "Unhealthy: " + std::to_string(failed) + " failed, " + std::to_string(warned) + " warning";
  } else if (warned > 0) {
    cls = "v-warning";
    headline = "Warning: " + std::to_string(warned) + " warning";
  } else if (!problems.empty() || report.verdicts.empty()) {
    cls = "v-unknown";
    headline = "Cannot judge this node";
  }
  out += "<div id=\"verdict\" class=\"verdict " + cls + "\">" + HtmlText(headline) + " &middot; " +
         std::to_string(oks) + " ok, " + std::to_string(unknowns) + " unknown</div>\n";
  for (const std::string& p : problems) {
    out += "<p class=\"verdict v-unknown\">Cannot judge this node: " + HtmlText(p) + "</p>\n";
  }
  if (!bad.empty()) {
    out += "<h2 id=\"problems\">Failed and warning</h2>\n";
    VerdictTable(out, "t-problems", bad, true);
  }
  // Unknown and ok are folded: counted, opened on demand.
  if (!unknown.empty()) {
    out += "<details id=\"unknown\"><summary>" + std::to_string(unknowns) + " unknown (could not be judged)</summary>\n";
    VerdictTable(out, "t-unknown", unknown, true);
    out += "</details>\n";
  }
  out += "<details id=\"ok\"><summary>" + std::to_string(oks) + " checks ok</summary>\n";
  VerdictTable(out, "t-ok", ok, false);
  out += "</details>\n";
}

void Devices(std::string& out, const Report& report) {
  const NodeSummary s = SummarizeNode(report);
  out += "<h2 id=\"devices\">Devices and ports</h2>\n";
  if (!s.devices_known) out += "<p>The devices collector did not run: port states are unknown.</p>\n";
  if (s.devices.empty()) {
    out += "<p>No RDMA device.</p>\n";
  } else {
    out += "<div class=\"scroll\"><table class=\"wide\" id=\"t-ports\"><thead><tr><th>port</th><th>link layer</th><th>state</th>"
           "<th>physical</th><th>rate</th><th>netdevs</th><th>firmware</th></tr></thead><tbody>\n";
    for (const DeviceSummary& d : s.devices) {
      if (d.ports.empty()) {
        out += "<tr>";
        Cell(out, d.name);
        out += "<td colspan=\"5\">" + HtmlText(d.ports_unreadable ? "ports unreadable: " + *d.ports_unreadable : "no ports") +
               "</td>";
        Cell(out, OrUnknown(d.fw_ver));
        out += "</tr>\n";
      }
      for (const PortSummary& p : d.ports) {
        std::string netdevs;
        for (const std::string& n : p.netdevs) netdevs += (netdevs.empty() ? "" : ", ") + n;
        const std::string state = OrUnknown(p.state);
        out += "<tr>";
        Cell(out, d.name + "/" + std::to_string(p.port));
        Cell(out, OrUnknown(p.link_layer));
        Cell(out, state, state == "ACTIVE" ? "s-ok" : "s-failed");
        Cell(out, OrUnknown(p.phys_state));
        Cell(out, Rate(p.rate_bytes_per_second));
        Cell(out, netdevs.empty() ? "-" : netdevs);
        Cell(out, OrUnknown(d.fw_ver));
        out += "</tr>\n";
      }
    }
    out += "</tbody></table></div>\n";
  }
  if (s.netdevs.empty()) return;
  out += "<h2 id=\"netdevs\">Netdevs</h2>\n<div class=\"scroll\"><table class=\"wide\" id=\"t-netdevs\"><thead><tr><th>netdev</th><th>ports</th>"
         "<th>state</th><th>MTU</th><th>speed</th><th>PFC on</th><th>trust</th><th>ECN NP</th><th>ECN RP</th>"
         "</tr></thead><tbody>\n";
  for (const NetdevSummary& n : s.netdevs) {
    std::string ports;
    for (const std::string& p : n.ports) ports += (ports.empty() ? "" : ", ") + p;
    out += "<tr>";
    Cell(out, n.name);
    Cell(out, ports);
    Cell(out, n.present.value_or(true) ? OrUnknown(n.operstate) : "absent");
    Cell(out, n.mtu ? std::to_string(*n.mtu) : "unknown");
    Cell(out, n.speed_mbps ? std::to_string(*n.speed_mbps) + " Mb/s" : "unknown");
    std::string pfc = n.dcb_supported == false ? "no DCB" : Priorities(n.pfc_priorities);
    if (!n.pfc_priorities && !n.dcb_note.empty()) pfc += " (" + n.dcb_note + ")";
    Cell(out, pfc);
    Cell(out, OrUnknown(n.trust));
    Cell(out, Priorities(n.ecn_np_priorities));
    Cell(out, Priorities(n.ecn_rp_priorities));
    out += "</tr>\n";
  }
  out += "</tbody></table></div>\n";
}

void Peers(std::string& out, const Report& report) {
  const auto* peers = report.snapshot.Get<PeerFacts>();
  if (peers == nullptr) return;
  out += "<h2 id=\"peers\">Peers</h2>\n";
  if (!peers->targets_file_error.empty()) {
    out += "<p class=\"verdict v-warning\">Targets file: " + HtmlText(peers->targets_file_error) + "</p>\n";
  }
  if (!peers->discovery_error.empty()) {
    out += "<p class=\"verdict v-warning\">Discovery: " + HtmlText(peers->discovery_error) + "</p>\n";
  }
  if (peers->peers.empty()) {
    out += "<p>No peer configured.</p>\n";
    return;
  }
  out += "<div class=\"scroll\"><table class=\"wide\" id=\"t-peers\"><thead><tr><th>peer</th><th>address</th><th>last latency probe</th>"
         "<th>median &micro;s</th><th>p99 &micro;s</th><th>why it failed</th></tr></thead><tbody>\n";
  for (const auto& p : peers->peers) {
    const char* last = p->last_latency == PeerProbeResult::kSuccess   ? "success"
                       : p->last_latency == PeerProbeResult::kFailure ? "failure"
                                                                      : "not yet";
    out += "<tr>";
    Cell(out, p->name);
    Cell(out, p->address.empty() ? "unresolved" : p->address);
    Cell(out, last, p->last_latency == PeerProbeResult::kFailure ? "s-failed" : "");
    Cell(out, p->latency ? Microseconds(p->latency->typical_us) : "-");
    Cell(out, p->latency ? Microseconds(p->latency->p99_us) : "-");
    Cell(out, p->latency_failure ? p->latency_failure->reason + ": " + p->latency_failure->message : "");
    out += "</tr>\n";
  }
  out += "</tbody></table></div>\n";
}

void Self(std::string& out, const Report& report, const DaemonStatus& d) {
  out += "<h2 id=\"daemon\">rdma-healthd</h2>\n<dl>";
  auto row = [&out](std::string_view k, std::string_view v) {
    out += "<dt>" + HtmlText(k) + "</dt><dd>" + HtmlText(v) + "</dd>";
  };
  row("version", d.version);
  row("uptime", FormatUptime(d.uptime_seconds));
  row("ready", d.ready ? "yes" : "no (first collection running)");
  row("configuration", d.config_source);
  row("last reload", std::string(d.last_reload_ok ? "ok" : "FAILED (the previous configuration is kept)") +
                         ", last success " + UtcTime(d.last_reload_success_unix));
  row("sysfs", d.sysfs_root);
  out += "</dl>\n";
  std::map<std::string, const CollectorOutcome*> outcome;
  for (const CollectorOutcome& o : report.snapshot.outcomes) outcome[o.collector] = &o;
  std::string failing;
  for (const CollectorOutcome& o : report.snapshot.outcomes) {
    if (o.success) continue;
    failing += "<li><b>" + HtmlText(o.collector) + "</b>: " + HtmlText(o.errors.empty() ? "failed" : o.errors.back()) +
               "</li>\n";
  }
  for (const auto& [collector, n] : report.collection_timeouts) {
    failing += "<li><b>" + HtmlText(collector) + "</b>: missed the collection deadline " + std::to_string(n) +
               (n == 1 ? " time" : " times") + "</li>\n";
  }
  if (!failing.empty()) out += "<p>Collectors failing:</p>\n<ul id=\"collectors-failing\">\n" + failing + "</ul>\n";
  out += "<details><summary>" + std::to_string(d.collectors.size()) + " collectors</summary><ul>\n";
  for (const DaemonStatus::Collector& c : d.collectors) {
    auto it = outcome.find(c.name);
    std::string state = !c.enabled ? "disabled" : it == outcome.end() ? "not run" : it->second->success ? "ok" : "failed";
    if (it != outcome.end() && !it->second->errors.empty()) {
      state += ", " + std::to_string(it->second->errors.size()) + " values skipped";
    }
    out += "<li>" + HtmlText(c.name) + " (" + HtmlText(state) + "): " + HtmlText(c.description) + "</li>\n";
  }
  out += "</ul></details>\n";
}

}  // namespace

std::string HtmlText(std::string_view s) {
  const std::string shown = TerminalText(s);
  std::string out;
  out.reserve(shown.size());
  for (char c : shown) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string RenderStatusPage(const Report& report, const std::vector<std::string>& problems,
                             const DaemonStatus& daemon) {
  std::string out;
  out.reserve(16384);
  out += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
         // Defence in depth behind the escaping: no script, no external anything.
         "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
         "<title>rdma-healthd on " + HtmlText(daemon.hostname) + "</title>\n<style>" + kStyle +
         "</style></head>\n<body><main>\n<h1>rdma-healthd on " + HtmlText(daemon.hostname) + "</h1>\n"
         "<nav><a href=\"/metrics\">/metrics</a><a href=\"/api/v1/checks\">/api/v1/checks</a>"
         "<a href=\"/api/v1/devices\">/api/v1/devices</a><a href=\"/-/healthy\">/-/healthy</a>"
         "<a href=\"/-/ready\">/-/ready</a></nav>\n";
  Verdicts(out, report, problems);
  Devices(out, report);
  Peers(out, report);
  Self(out, report, daemon);
  out += "<footer>Rendered from the collection of " +
         UtcTime(std::chrono::duration<double>(report.snapshot.taken_at.time_since_epoch()).count()) +
         ". Metrics and verdicts for Prometheus: <a href=\"/metrics\">/metrics</a>.</footer>\n</main></body></html>\n";
  return out;
}

}  // namespace rdmahd
