#include "daemon/check_command.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <ostream>
#include <thread>

#include "common/excerpt.h"
#include "common/logging.h"
#include "common/held_files.h"
#include "core/verdict_order.h"
#include "daemon/capture_check.h"
#include "daemon/daemon.h"
#include "daemon/json_api.h"

namespace rdmahd {

int CheckExitCode(const Report& report, bool fail_on_warning, const std::vector<std::string>& problems) {
  bool failed = false, warned = false, collector_failed = false;
  for (const VerdictView r : report.verdicts) {
    failed |= r.verdict == Verdict::kFailed;
    warned |= r.verdict == Verdict::kWarning;
  }
  for (const CollectorOutcome& o : report.snapshot.outcomes) collector_failed |= !o.success;
  if (failed || (fail_on_warning && warned)) return kExitFailed;
  if (collector_failed || !problems.empty()) return kExitCouldNotRun;
  return kExitOk;
}

namespace {

// Columns are as wide as their widest cell in characters (the escaped text is valid UTF-8).
std::size_t Width(std::string_view s) {
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const std::string& p : parts) {
    if (!out.empty()) out += sep;
    out += p;
  }
  return out;
}

// A group's subjects in the table's SUBJECT column: all of them when they fit in this many
// characters, else the first and how many more (all of them on a line of their own).
constexpr std::size_t kSubjectCellChars = 40;

}  // namespace

void PrintCheckTable(const Report& report, std::ostream& out, const std::vector<std::string>& problems) {
  struct Row {
    std::string check, subject, status, reason, fix, subjects;
  };
  // Worst first, identical verdicts of several subjects on one row (core/verdict_order.h).
  const std::vector<VerdictGroup> groups = GroupVerdicts(report.verdicts);
  std::vector<Row> rows;
  rows.reserve(groups.size());
  std::size_t wc = 5, ws = 7;
  for (const VerdictGroup& g : groups) {
    std::vector<std::string> subjects;
    subjects.reserve(g.subjects.size());
    for (const std::string& s : g.subjects) subjects.push_back(TerminalText(s));
    Row row{TerminalText(g.check), subjects.front(), TerminalText(VerdictName(g.verdict)), TerminalText(g.reason),
            g.verdict != Verdict::kOk ? TerminalText(g.fix) : std::string(), {}};
    if (subjects.size() > 1) {
      const std::string all = Join(subjects, ", ");
      if (Width(all) <= kSubjectCellChars) {
        row.subject = all;
      } else {
        row.subject = subjects.front() + " and " + std::to_string(subjects.size() - 1) + " more";
        row.subjects = all;
      }
    }
    wc = std::max(wc, Width(row.check));
    ws = std::max(ws, Width(row.subject));
    rows.push_back(std::move(row));
  }
  auto pad = [](std::string_view s, std::size_t w) {
    std::string p(s);
    p.append(w > Width(s) ? w - Width(s) : 0, ' ');
    return p;
  };
  out << pad("CHECK", wc) << "  " << pad("SUBJECT", ws) << "  " << pad("STATUS", 7) << "  REASON\n";
  std::map<Verdict, int> counts;
  for (const VerdictView r : report.verdicts) ++counts[r.verdict];
  const std::string indent = pad("", wc) + "  " + pad("", ws) + "  " + pad("", 7) + "  ";
  for (const Row& row : rows) {
    out << pad(row.check, wc) << "  " << pad(row.subject, ws) << "  " << pad(row.status, 7) << "  " << row.reason
        << "\n";
    if (!row.subjects.empty()) out << indent << "subjects: " << row.subjects << "\n";
    if (!row.fix.empty()) out << indent << "fix: " << row.fix << "\n";
  }
  for (const CollectorOutcome& o : report.snapshot.outcomes) {
    if (!o.success) {
      out << "collector " << TerminalText(o.collector)
          << " failed: " << (o.errors.empty() ? "" : TerminalText(o.errors.back())) << "\n";
    }
  }
  for (const std::string& p : problems) out << "cannot judge this node: " << TerminalText(p) << "\n";
  out << "\n" << counts[Verdict::kOk] << " ok, " << counts[Verdict::kWarning] << " warning, "
      << counts[Verdict::kFailed] << " failed, " << counts[Verdict::kUnknown] << " unknown\n";
}

void PrintCheckJson(const Report& report, int exit_code, std::ostream& out,
                    const std::vector<std::string>& problems) {
  out << ChecksDocument(report, exit_code, problems);
}

namespace {

// `s` as printable ASCII: anything else (control bytes, UTF-8 sequences) is '?'. NPD cuts the
// message at a byte count and puts it in a node condition.
std::string PrintableAscii(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  return out;
}

// A group as a summary item: "check subject", its subjects joined by "," (as many as fit in
// kSummaryItemBytes, then ",+N").
constexpr std::size_t kSummaryItemBytes = 72;

std::string SummaryItem(const VerdictGroup& g) {
  std::string item = g.check + " " + g.subjects.front();
  for (std::size_t i = 1; i < g.subjects.size(); ++i) {
    const std::string rest = ",+" + std::to_string(g.subjects.size() - i);
    const bool last = i + 1 == g.subjects.size();
    if (item.size() + 1 + g.subjects[i].size() + (last ? 0 : rest.size()) > kSummaryItemBytes) {
      item += rest;
      break;
    }
    item += "," + g.subjects[i];
  }
  return item;
}

}  // namespace

std::string CheckSummaryLine(const Report& report, int exit_code, const std::vector<std::string>& problems) {
  std::map<Verdict, int> counts;
  for (const VerdictView r : report.verdicts) ++counts[r.verdict];
  auto plural = [](int n, const char* word) {
    return std::to_string(n) + " " + word + (n == 1 || word[std::strlen(word) - 1] == 'd' ? "" : "s");
  };
  std::string line;
  if (exit_code == kExitFailed) {
    line = "RDMA unhealthy: " + plural(counts[Verdict::kFailed], "failed") + ", " +
           plural(counts[Verdict::kWarning], "warning") + ":";
  } else if (exit_code == kExitCouldNotRun) {
    line = "RDMA health unknown:";
  } else {
    line = "RDMA healthy: " + plural(counts[Verdict::kOk], "check") + " ok";
    if (counts[Verdict::kUnknown] > 0) line += ", " + std::to_string(counts[Verdict::kUnknown]) + " unknown";
    if (counts[Verdict::kWarning] > 0) line += ", " + plural(counts[Verdict::kWarning], "warning") + ":";
  }
  // The worst first (core/verdict_order.h: what failed by its cost, then what warned), identical
  // verdicts of several subjects as one item; then why the node cannot be judged.
  std::vector<std::string> items;
  for (const VerdictGroup& g : GroupVerdicts(report.verdicts)) {
    if (g.verdict == Verdict::kFailed) items.push_back(SummaryItem(g));
    if (g.verdict == Verdict::kWarning) items.push_back(SummaryItem(g) + " (warning)");
  }
  if (exit_code == kExitCouldNotRun) {
    for (const std::string& p : problems) items.push_back(p);
    for (const CollectorOutcome& o : report.snapshot.outcomes) {
      if (!o.success) items.push_back("collector " + o.collector + " failed" + (o.errors.empty() ? "" : ": " + o.errors.back()));
    }
  }
  std::size_t shown = 0;
  for (const std::string& item : items) {
    std::string next = (shown == 0 ? " " : "; ") + item;
    if (line.size() + next.size() > kCheckSummaryBytes - 12) break;
    line += next;
    ++shown;
  }
  if (shown < items.size()) line += "; +" + std::to_string(items.size() - shown) + " more";
  if (line.back() == ':') line.pop_back();
  line = PrintableAscii(line);
  if (line.size() > kCheckSummaryBytes) line.resize(kCheckSummaryBytes);
  return line;
}

std::string CheckCouldNotRunLine(std::string_view message) {
  std::string_view first = message;
  while (!first.empty() && (first.front() == '\n' || first.front() == ' ')) first.remove_prefix(1);
  first = first.substr(0, first.find('\n'));
  constexpr std::string_view kOwnName = "rdma-healthd: ";
  if (first.substr(0, kOwnName.size()) == kOwnName) first.remove_prefix(kOwnName.size());
  std::string line = PrintableAscii("RDMA health unknown: " + std::string(first));
  while (!line.empty() && line.back() == ' ') line.pop_back();
  if (line.size() > kCheckSummaryBytes) line.resize(kCheckSummaryBytes);
  return line;
}

bool InvokesCheck(int argc, const char* const* argv) {
  for (int i = 1; i < argc && argv[i] != nullptr; ++i) {
    const std::string_view a = argv[i];
    if (a == "--") return false;
    if (a == "check") return true;
  }
  return false;
}

namespace {

// `report` with every text that can name a path (verdicts, collector errors, the config's source)
// written relative to the bundle extracted at `root` (BundleRelative).
Report WithBundlePaths(const Report& report, const std::string& root) {
  Report out = report;
  VerdictList verdicts;
  verdicts.reserve(report.verdicts.size());
  for (const VerdictView v : report.verdicts) {
    verdicts.push_back(CheckResult{std::string(v.check), BundleRelative(v.subject, root), v.verdict,
                                   BundleRelative(v.reason, root), BundleRelative(v.fix, root)});
  }
  verdicts.ShrinkToFit();
  out.verdicts = std::move(verdicts);
  for (CollectorOutcome& o : out.snapshot.outcomes) {
    for (std::string& e : o.errors) e = BundleRelative(e, root);
  }
  if (report.config) {
    auto config = std::make_shared<Config>(*report.config);
    config->source = BundleRelative(config->source, root);
    out.config = std::move(config);
  }
  return out;
}

}  // namespace

int RunCheckCommand(const Options& options, CollectionEngine& engine, std::ostream& out, std::ostream& err) {
  auto config = LoadEffectiveConfig(options);
  if (!config.ok()) {
    err << "rdma-healthd: " << config.error().message << "\n";
    // node-problem-detector reads a plug-in's message from stdout only.
    out << CheckCouldNotRunLine(config.error().message) << "\n";
    return kExitCouldNotRun;
  }
  std::shared_ptr<const Report> report = engine.Collect(*config);
  if (options.sample_interval.count() > 0) {
    // A second collection for the checks that judge rates: the first one's samples are in the
    // engine's history. Never within the scrape cache window, which would hand back the first.
    const std::shared_ptr<const Config>& c = *config;
    std::this_thread::sleep_for(std::max<std::chrono::milliseconds>(
        options.sample_interval, c->scrape_cache_window + std::chrono::milliseconds(10)));
    report = engine.Collect(c);
  }
  if (HeldFdBudget::Process().TakeExhaustedNotice()) {
    log::Info("held-file budget used up: the rest was read open/read/close",
              {{"budget", std::to_string(HeldFdBudget::Process().limit())}});
  }
  std::vector<std::string> problems;
  if (auto p = SysfsRootProblem(*report, engine.fs())) problems.push_back(std::move(*p));
  const std::string root = ExtractedCaptureRoot(options);
  // A bundle that says its capture was cut short: what it left out is not there to judge.
  if (!root.empty()) {
    if (auto p = IncompleteCaptureProblem(root)) problems.push_back(std::move(*p));
  }
  int code = CheckExitCode(*report, options.fail_on_warning, problems);
  // A bundle judged: its extracted folder is deleted when the command ends, so what is printed
  // names files in the bundle instead.
  if (!root.empty()) {
    report = std::make_shared<const Report>(WithBundlePaths(*report, root));
    for (std::string& p : problems) p = BundleRelative(p, root);
  }
  if (options.output == "json") {
    PrintCheckJson(*report, code, out, problems);
  } else if (options.output == "summary") {
    out << CheckSummaryLine(*report, code, problems) << "\n";
  } else {
    PrintCheckTable(*report, out, problems);
  }
  return code;
}

}  // namespace rdmahd
