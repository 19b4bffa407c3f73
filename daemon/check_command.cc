#include "daemon/check_command.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <ostream>
#include <thread>

#include "common/excerpt.h"
#include "common/node_fs.h"
#include "daemon/daemon.h"
#include "daemon/json_api.h"
#include "daemon/logging.h"

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

void PrintCheckTable(const Report& report, std::ostream& out, const std::vector<std::string>& problems) {
  struct Row {
    std::string check, subject, status, reason, fix;
  };
  std::vector<Row> rows;
  rows.reserve(report.verdicts.size());
  // Columns are as wide as their widest cell in characters (the escaped text is valid UTF-8).
  auto width = [](std::string_view s) {
    return static_cast<std::size_t>(
        std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
  };
  std::size_t wc = 5, ws = 7;
  for (const VerdictView r : report.verdicts) {
    Row row{TerminalText(r.check), TerminalText(r.subject), TerminalText(VerdictName(r.verdict)), TerminalText(r.reason),
            r.verdict != Verdict::kOk ? TerminalText(r.fix) : std::string()};
    wc = std::max(wc, width(row.check));
    ws = std::max(ws, width(row.subject));
    rows.push_back(std::move(row));
  }
  auto pad = [&width](std::string_view s, std::size_t w) {
    std::string p(s);
    p.append(w > width(s) ? w - width(s) : 0, ' ');
    return p;
  };
  out << pad("CHECK", wc) << "  " << pad("SUBJECT", ws) << "  " << pad("STATUS", 7) << "  REASON\n";
  std::map<Verdict, int> counts;
  for (const VerdictView r : report.verdicts) ++counts[r.verdict];
  for (const Row& row : rows) {
    out << pad(row.check, wc) << "  " << pad(row.subject, ws) << "  " << pad(row.status, 7) << "  " << row.reason
        << "\n";
    if (!row.fix.empty()) {
      out << pad("", wc) << "  " << pad("", ws) << "  " << pad("", 7) << "  fix: " << row.fix << "\n";
    }
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

}  // namespace

std::string CheckSummaryLine(const Report& report, int exit_code, const std::vector<std::string>& problems) {
  std::map<Verdict, int> counts;
  std::vector<VerdictView> failed, warned;
  for (const VerdictView r : report.verdicts) {
    ++counts[r.verdict];
    if (r.verdict == Verdict::kFailed) failed.push_back(r);
    if (r.verdict == Verdict::kWarning) warned.push_back(r);
  }
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
  // The worst first: what failed, then what warned, each as "check subject"; why it cannot be judged.
  std::vector<std::string> items;
  for (const VerdictView& r : failed) items.push_back(std::string(r.check).append(" ").append(r.subject));
  for (const VerdictView& r : warned) items.push_back(std::string(r.check).append(" ").append(r.subject).append(" (warning)"));
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

int RunCheckCommand(const Options& options, CollectionEngine& engine, std::ostream& out, std::ostream& err) {
  auto config = LoadEffectiveConfig(options);
  if (!config.ok()) {
    err << "rdma-healthd: " << config.error().message << "\n";
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
  int code = CheckExitCode(*report, options.fail_on_warning, problems);
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
