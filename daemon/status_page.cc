#include "daemon/status_page.h"

#include <time.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <set>
#include <unordered_map>
#include <utility>

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

std::string UrlArg(std::string_view s);
std::string Link(std::string_view query, std::string_view text);

// One row per group (core/verdict_order.h): its subjects named together, at most `max_subjects`
// of them (0: all), then "and N more" linking to the check's list, where the row names them all.
void VerdictTable(std::string& out, std::string_view id, const std::vector<const VerdictGroup*>& groups,
                  bool with_fix, std::size_t max_subjects = 0) {
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
    if (max_subjects == 0 || g->subjects.size() <= max_subjects) {
      Cell(out, JoinSubjects(g->subjects), {}, g->subjects.size() == 1 ? "subject" : "subjects");
    } else {
      const std::vector<std::string> first(g->subjects.begin(), g->subjects.begin() + static_cast<std::ptrdiff_t>(max_subjects));
      out += "<td data-label=\"subjects\">" + HtmlText(JoinSubjects(first)) + ", " +
             Link("status=" + status + "&check=" + UrlArg(g->check),
                  "and " + std::to_string(g->subjects.size() - max_subjects) + " more") +
             "</td>";
    }
    out += "<td data-label=\"reason\">" + WrappableHtml(g->reason) + "</td>";
    if (with_fix && !g->fix.empty()) out += "<td data-label=\"fix\"><code>" + WrappableHtml(g->fix) + "</code></td>";
    if (with_fix && g->fix.empty()) out += "<td></td>";
    out += "</tr>\n";
  }
  out += "</tbody></table></div>\n";
}

// `s` as a query argument value: everything but unreserved characters (RFC 3986) percent-encoded.
std::string UrlArg(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// An <a> to `/?query` (its values already UrlArg-encoded) with `text` as its content.
std::string Link(std::string_view query, std::string_view text) {
  return "<a href=\"" + HtmlText("/?" + std::string(query)) + "\">" + HtmlText(text) + "</a>";
}

std::string DeviceHref(std::string_view device) { return HtmlText("/?device=" + UrlArg(device)); }

struct Counts {
  std::size_t failed = 0, warned = 0, unknowns = 0, oks = 0;
};

Counts CountVerdicts(const VerdictList& verdicts) {
  Counts c;
  for (const VerdictView v : verdicts) {
    switch (v.verdict) {
      case Verdict::kFailed: ++c.failed; break;
      case Verdict::kWarning: ++c.warned; break;
      case Verdict::kUnknown: ++c.unknowns; break;
      case Verdict::kOk: ++c.oks; break;
    }
  }
  return c;
}

void Headline(std::string& out, const Report& report, const std::vector<std::string>& problems, const Counts& c) {
  std::string cls = "v-ok", headline = "Healthy: every check that could judge is ok";
  if (c.failed > 0) {
    cls = "v-failed";
    headline = "Unhealthy: " + std::to_string(c.failed) + " failed, " + std::to_string(c.warned) + " warning";
  } else if (c.warned > 0) {
    cls = "v-warning";
    headline = "Warning: " + std::to_string(c.warned) + " warning";
  } else if (!problems.empty() || report.verdicts.empty()) {
    cls = "v-unknown";
    headline = "Cannot judge this node";
  }
  out += "<div id=\"verdict\" class=\"verdict " + cls + "\">" + HtmlText(headline) + " &middot; " +
         std::to_string(c.oks) + " ok, " + std::to_string(c.unknowns) + " unknown</div>\n";
  for (const std::string& p : problems) {
    out += "<p class=\"verdict v-unknown\">Cannot judge this node: " + HtmlText(p) + "</p>\n";
  }
}

// Unknown and ok verdicts of a big node: one row per check with its counts, each linking to its list.
void CountsByCheck(std::string& out, const Report& report, const Counts& c) {
  std::map<std::string_view, std::pair<std::size_t, std::size_t>> by_check;  // unknown, ok
  for (const VerdictView v : report.verdicts) {
    if (v.verdict == Verdict::kUnknown) ++by_check[v.check].first;
    if (v.verdict == Verdict::kOk) ++by_check[v.check].second;
  }
  out += "<h2 id=\"by-check\">Unknown and ok, by check</h2>\n<p>" + std::to_string(c.unknowns) + " unknown and " +
         std::to_string(c.oks) +
         " ok verdicts, counted per check; a count lists them.</p>\n"
         "<div class=\"scroll\"><table class=\"cards\" id=\"t-by-check\"><thead><tr><th>check</th><th>unknown</th>"
         "<th>ok</th></tr></thead><tbody>\n";
  for (const auto& [check, n] : by_check) {
    auto count = [&, check = check](std::size_t k, std::string_view status) {
      if (k == 0) return std::string("0");
      return Link("status=" + std::string(status) + "&check=" + UrlArg(check), std::to_string(k));
    };
    out += "<tr>";
    Cell(out, check, {}, "check");
    out += "<td class=\"s-unknown\" data-label=\"unknown\">" + count(n.first, "unknown") + "</td>";
    out += "<td class=\"s-ok\" data-label=\"ok\">" + count(n.second, "ok") + "</td></tr>\n";
  }
  out += "</tbody></table></div>\n";
}

// The verdicts at `positions` (surface order) as grouped rows.
std::vector<VerdictGroup> GroupSelected(const Report& report, const std::vector<std::size_t>& positions) {
  VerdictList selected;
  selected.reserve(positions.size());
  for (const std::size_t i : positions) selected.push_back(report.verdicts[i].ToResult());
  return GroupVerdicts(selected);
}

// The verdicts of `/`: failed and warning rows up to kPageProblemRows; unknown and ok folded (a
// small node) or counted per check (past kPageFoldedVerdicts).
void Verdicts(std::string& out, const Report& report, const std::vector<std::string>& problems) {
  const Counts c = CountVerdicts(report.verdicts);
  const bool fold = c.unknowns + c.oks <= kPageFoldedVerdicts;
  // Worst first, by what it costs; identical verdicts of several subjects as one row. Past the
  // fold bound only failed and warning verdicts are grouped: grouping a 2,000-device node's 80,000
  // verdicts to show none of the unknown and ok rows cost most of the page's render.
  // (GroupVerdicts puts them in surface order: list order is enough here.)
  std::vector<std::size_t> bad_only;
  if (!fold) {
    for (std::size_t i = 0; i < report.verdicts.size(); ++i) {
      const Verdict v = report.verdicts[i].verdict;
      if (v == Verdict::kFailed || v == Verdict::kWarning) bad_only.push_back(i);
    }
  }
  const std::vector<VerdictGroup> groups = fold ? GroupVerdicts(report.verdicts) : GroupSelected(report, bad_only);
  std::vector<const VerdictGroup*> bad, unknown, ok;
  for (const VerdictGroup& g : groups) {
    switch (g.verdict) {
      case Verdict::kFailed: case Verdict::kWarning: bad.push_back(&g); break;
      case Verdict::kUnknown: unknown.push_back(&g); break;
      case Verdict::kOk: ok.push_back(&g); break;
    }
  }
  Headline(out, report, problems, c);
  if (!bad.empty()) {
    out += "<h2 id=\"problems\">Failed and warning</h2>\n";
    const std::size_t more = bad.size() > kPageProblemRows ? bad.size() - kPageProblemRows : 0;
    if (more > 0) bad.resize(kPageProblemRows);
    VerdictTable(out, "t-problems", bad, true, kPageRowSubjects);
    if (more > 0) {
      out += "<p id=\"problems-more\">" + std::to_string(more) + " more failed and warning rows: " +
             Link("status=failed,warning&offset=" + std::to_string(kPageProblemRows), "the rest of the list") + "</p>\n";
    }
  }
  if (!fold) return CountsByCheck(out, report, c);
  // Unknown and ok are folded: counted, opened on demand.
  if (!unknown.empty()) {
    out += "<details id=\"unknown\"><summary>" + std::to_string(c.unknowns) + " unknown (could not be judged)</summary>\n";
    VerdictTable(out, "t-unknown", unknown, true);
    out += "</details>\n";
  }
  out += "<details id=\"ok\"><summary>" + std::to_string(c.oks) + " checks ok</summary>\n";
  VerdictTable(out, "t-ok", ok, false);
  out += "</details>\n";
}

// "rows 201-400 of 950 · previous · next", paging `query` (without offset and limit).
void Pager(std::string& out, std::string_view what, std::string_view query, std::size_t offset, std::size_t limit,
           std::size_t shown, std::size_t total, bool limit_given) {
  out += "<p class=\"pager\">" + HtmlText(std::string(what)) + " ";
  out += shown == 0 ? "none" : std::to_string(offset + 1) + "-" + std::to_string(offset + shown);
  out += " of " + std::to_string(total);
  const std::string base = std::string(query) + (query.empty() ? "" : "&");
  const std::string lim = limit_given ? "&limit=" + std::to_string(limit) : "";
  if (offset > 0) {
    out += " &middot; " + Link(base + "offset=" + std::to_string(offset > limit ? offset - limit : 0) + lim, "previous");
  }
  if (offset + shown < total) out += " &middot; " + Link(base + "offset=" + std::to_string(offset + limit) + lim, "next");
  out += " &middot; <a href=\"/\">the node</a></p>\n";
}

// The ports table (a row per port, a device's name linking to its page) and the netdevs behind the
// ports of `shown` (indices into s.devices).
void DeviceTables(std::string& out, const NodeSummary& s, const std::vector<std::size_t>& shown) {
  if (shown.empty()) return;
  out += "<div class=\"scroll\"><table class=\"wide\" id=\"t-ports\"><thead><tr><th>port</th><th>link layer</th><th>state</th>"
         "<th>physical</th><th>rate</th><th>netdevs</th><th>firmware</th></tr></thead><tbody>\n";
  std::set<std::string_view> netdevs_shown;
  for (const std::size_t i : shown) {
    const DeviceSummary& d = s.devices[i];
    const std::string href = DeviceHref(d.name);
    if (d.ports.empty()) {
      out += "<tr><td><a href=\"" + href + "\">" + HtmlText(d.name) + "</a></td>";
      out += "<td colspan=\"5\">" + HtmlText(d.ports_unreadable ? "ports unreadable: " + *d.ports_unreadable : "no ports") +
             "</td>";
      Cell(out, OrUnknown(d.fw_ver));
      out += "</tr>\n";
    }
    for (const PortSummary& p : d.ports) {
      std::string netdevs;
      for (const std::string& n : p.netdevs) {
        netdevs += (netdevs.empty() ? "" : ", ") + n;
        netdevs_shown.insert(n);
      }
      const std::string state = OrUnknown(p.state);
      out += "<tr><td><a href=\"" + href + "\">" + HtmlText(d.name + "/" + std::to_string(p.port)) + "</a></td>";
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
  // Every netdev when every device is shown (a netdev the topology names is behind some port).
  const bool all = shown.size() == s.devices.size();
  bool any = false;
  for (const NetdevSummary& n : s.netdevs) any = any || all || netdevs_shown.contains(n.name);
  if (!any) return;
  out += "<h2 id=\"netdevs\">Netdevs</h2>\n<div class=\"scroll\"><table class=\"wide\" id=\"t-netdevs\"><thead><tr><th>netdev</th><th>ports</th>"
         "<th>state</th><th>MTU</th><th>speed</th><th>PFC on</th><th>trust</th><th>ECN NP</th><th>ECN RP</th>"
         "</tr></thead><tbody>\n";
  for (const NetdevSummary& n : s.netdevs) {
    if (!all && !netdevs_shown.contains(n.name)) continue;
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

// Indices of the devices that a failed or warning verdict names (the device, a port of it, a
// netdev behind one), by name.
std::vector<std::size_t> DevicesWithProblems(const Report& report, const NodeSummary& s) {
  std::unordered_map<std::string_view, std::size_t> owner;
  for (std::size_t i = 0; i < s.devices.size(); ++i) owner.emplace(s.devices[i].name, i);
  std::unordered_map<std::string, std::size_t> port_owner;
  for (std::size_t i = 0; i < s.devices.size(); ++i) {
    for (const PortSummary& p : s.devices[i].ports) {
      port_owner.emplace(s.devices[i].name + "/" + std::to_string(p.port), i);
      for (const std::string& n : p.netdevs) port_owner.emplace(n, i);
    }
  }
  std::set<std::size_t> flagged;
  for (const VerdictView v : report.verdicts) {
    if (v.verdict != Verdict::kFailed && v.verdict != Verdict::kWarning) continue;
    if (auto it = owner.find(v.subject); it != owner.end()) flagged.insert(it->second);
    if (auto it = port_owner.find(std::string(v.subject)); it != port_owner.end()) flagged.insert(it->second);
  }
  return {flagged.begin(), flagged.end()};
}

void Devices(std::string& out, const Report& report) {
  const NodeSummary s = SummarizeNode(report);
  out += "<h2 id=\"devices\">Devices and ports</h2>\n";
  if (!s.devices_known) out += "<p>The devices collector did not run: port states are unknown.</p>\n";
  if (s.devices.empty()) {
    out += "<p>No RDMA device.</p>\n";
  }
  std::vector<std::size_t> shown;
  if (s.devices.size() <= kPageDevices) {
    for (std::size_t i = 0; i < s.devices.size(); ++i) shown.push_back(i);
  } else {
    // A big node: the devices something is wrong with, the rest counted and a link away.
    shown = DevicesWithProblems(report, s);
    const std::size_t flagged = shown.size();
    if (shown.size() > kPageDevices) shown.resize(kPageDevices);
    out += "<p id=\"devices-shown\">" + std::to_string(s.devices.size()) + " devices; " +
           (flagged == 0 ? std::string("none has a failed or warning verdict")
                         : std::to_string(flagged) + " with a failed or warning verdict" +
                               (flagged > shown.size() ? ", the first " + std::to_string(shown.size()) + " shown"
                                                       : std::string(", shown"))) +
           ". " + Link("view=devices", "Every device") + " (" + std::to_string(kPageDevices) +
           " a page); a device's name shows its verdicts.</p>\n";
  }
  DeviceTables(out, s, shown);
}

// /?view=devices: every device, kPageDevices a page.
void DevicesPage(std::string& out, const Report& report, std::size_t offset) {
  const NodeSummary s = SummarizeNode(report);
  out += "<h2 id=\"devices\">Devices and ports</h2>\n";
  std::vector<std::size_t> shown;
  for (std::size_t i = offset; i < s.devices.size() && shown.size() < kPageDevices; ++i) shown.push_back(i);
  Pager(out, "devices", "view=devices", offset, kPageDevices, shown.size(), s.devices.size(), false);
  DeviceTables(out, s, shown);
}

// /?status=...&check=...&device=...: the rows (groups) the filter selects, paged.
void VerdictsPage(std::string& out, const Report& report, const VerdictFilter& filter) {
  const std::vector<VerdictGroup> groups = GroupSelected(report, SelectVerdicts(report, filter));
  std::string what, query;
  if (!filter.statuses.empty()) {
    std::string names;
    for (Verdict v : {Verdict::kFailed, Verdict::kWarning, Verdict::kUnknown, Verdict::kOk}) {
      if (filter.statuses.contains(v)) names += (names.empty() ? "" : ",") + std::string(VerdictName(v));
    }
    what += names;
    query += "status=" + names;
  }
  for (const auto& [name, value] : {std::pair{"check", &filter.check}, std::pair{"device", &filter.device}}) {
    if (value->empty()) continue;
    what += std::string(what.empty() ? "" : " · ") + name + " " + *value;
    query += std::string(query.empty() ? "" : "&") + name + "=" + UrlArg(*value);
  }
  out += "<h2 id=\"list\">Verdicts: " + HtmlText(what.empty() ? "all" : what) + "</h2>\n";
  const std::size_t limit = filter.limit.value_or(kPageListRows);
  const std::size_t first = std::min(filter.offset, groups.size());
  const std::size_t last = std::min(groups.size(), first + limit);
  std::vector<const VerdictGroup*> rows;
  for (std::size_t k = first; k < last; ++k) rows.push_back(&groups[k]);
  Pager(out, "rows", query, filter.offset, limit, rows.size(), groups.size(), filter.limit.has_value());
  if (!rows.empty()) VerdictTable(out, "t-list", rows, true);
}

// /?device=NAME: the device's verdicts of every status, its ports and netdevs.
void DevicePage(std::string& out, const Report& report, const std::string& device) {
  VerdictFilter filter;
  filter.device = device;
  const std::vector<std::size_t> positions = SelectVerdicts(report, filter);
  VerdictList own;
  for (const std::size_t i : positions) own.push_back(report.verdicts[i].ToResult());
  const Counts c = CountVerdicts(own);
  out += "<h2 id=\"device\">Device " + HtmlText(device) + "</h2>\n<p>" + std::to_string(c.failed) + " failed, " +
         std::to_string(c.warned) + " warning, " + std::to_string(c.unknowns) + " unknown, " + std::to_string(c.oks) +
         " ok verdicts on the device, its ports and their netdevs &middot; <a href=\"/\">the node</a></p>\n";
  const std::vector<VerdictGroup> groups = GroupVerdicts(own);
  std::vector<const VerdictGroup*> rows;
  for (const VerdictGroup& g : groups) rows.push_back(&g);
  if (!rows.empty()) VerdictTable(out, "t-device", rows, true);
  const NodeSummary s = SummarizeNode(report);
  std::vector<std::size_t> shown;
  for (std::size_t i = 0; i < s.devices.size(); ++i) {
    if (s.devices[i].name == device) shown.push_back(i);
  }
  out += "<h2 id=\"devices\">Ports</h2>\n";
  DeviceTables(out, s, shown);
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

Result<StatusPageView> ParseStatusPageQuery(const std::vector<QueryArgument>& query) {
  Result<std::map<std::string, std::string>> args =
      QueryArguments(query, {"status", "check", "device", "offset", "limit", "view"});
  if (!args.ok()) return args.error();
  StatusPageView view;
  if (auto it = args->find("view"); it != args->end()) {
    if (it->second != "devices") return Error{"parameter \"view\" takes only \"devices\""};
    for (const char* other : {"status", "check", "device", "limit"}) {
      if (args->contains(other)) {
        return Error{"parameter " + QuotedArgument(other) + " does not go with \"view\" (view=devices takes offset)"};
      }
    }
    view.kind = StatusPageView::Kind::kDevices;
    if (auto o = args->find("offset"); o != args->end()) {
      Result<std::size_t> n = ParseCount("offset", o->second);
      if (!n.ok()) return n.error();
      view.offset = *n;
    }
    return view;
  }
  Result<VerdictFilter> filter = ParseVerdictFilter(*args, kPageListMaxRows);
  if (!filter.ok()) return filter.error();
  view.filter = std::move(*filter);
  if (args->empty()) return view;
  view.kind = args->size() == 1 && args->contains("device") ? StatusPageView::Kind::kDevice
                                                             : StatusPageView::Kind::kVerdicts;
  return view;
}

std::string RenderStatusPage(const Report& report, const std::vector<std::string>& problems,
                             const DaemonStatus& daemon, const StatusPageView& view) {
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
  switch (view.kind) {
    case StatusPageView::Kind::kSummary:
      Verdicts(out, report, problems);
      Devices(out, report);
      Peers(out, report);
      Self(out, report, daemon);
      break;
    case StatusPageView::Kind::kVerdicts:
      Headline(out, report, problems, CountVerdicts(report.verdicts));
      VerdictsPage(out, report, view.filter);
      break;
    case StatusPageView::Kind::kDevice:
      Headline(out, report, problems, CountVerdicts(report.verdicts));
      DevicePage(out, report, view.filter.device);
      break;
    case StatusPageView::Kind::kDevices:
      Headline(out, report, problems, CountVerdicts(report.verdicts));
      DevicesPage(out, report, view.offset);
      break;
  }
  out += "<footer>Rendered from the collection of " +
         UtcTime(std::chrono::duration<double>(report.snapshot.taken_at.time_since_epoch()).count()) +
         ". Metrics and verdicts for Prometheus: <a href=\"/metrics\">/metrics</a>.</footer>\n</main></body></html>\n";
  return out;
}

}  // namespace rdmahd
