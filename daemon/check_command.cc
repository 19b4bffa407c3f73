#include "daemon/check_command.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>

#include "common/excerpt.h"
#include "common/node_fs.h"
#include "daemon/daemon.h"
#include "daemon/logging.h"

namespace rdmahd {

int CheckExitCode(const Report& report, bool fail_on_warning, const std::vector<std::string>& problems) {
  bool failed = false, warned = false, collector_failed = false;
  for (const CheckResult& r : report.verdicts) {
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
  for (const CheckResult& r : report.verdicts) {
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
  for (const CheckResult& r : report.verdicts) ++counts[r.verdict];
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
  nlohmann::ordered_json j;
  j["version"] = RDMAHD_VERSION;
  j["config"] = report.config ? report.config->source : "";
  j["exit_code"] = exit_code;
  auto& verdicts = j["verdicts"] = nlohmann::json::array();
  std::map<std::string, int> counts{{"ok", 0}, {"warning", 0}, {"failed", 0}, {"unknown", 0}};
  for (const CheckResult& r : report.verdicts) {
    ++counts[std::string(VerdictName(r.verdict))];
    verdicts.push_back({{"check", r.check},
                        {"subject", r.subject},
                        {"status", VerdictName(r.verdict)},
                        {"reason", r.reason},
                        {"fix", r.fix}});
  }
  auto& collectors = j["collectors"] = nlohmann::json::array();
  for (const CollectorOutcome& o : report.snapshot.outcomes) {
    collectors.push_back({{"collector", o.collector}, {"success", o.success}, {"errors", o.errors}});
  }
  j["problems"] = problems;
  j["summary"] = counts;
  // ASCII only: a C1 control or a bidi override from a capture reaches a terminal as \uNNNN, as
  // control characters already do; a parser reads the same strings back.
  out << j.dump(2, ' ', /*ensure_ascii=*/true, nlohmann::json::error_handler_t::replace) << "\n";
}

int RunCheckCommand(const Options& options, CollectionEngine& engine, std::ostream& out, std::ostream& err) {
  auto config = LoadEffectiveConfig(options);
  if (!config.ok()) {
    err << "rdma-healthd: " << config.error().message << "\n";
    return kExitCouldNotRun;
  }
  std::shared_ptr<const Report> report = engine.Collect(*config);
  if (HeldFdBudget::Process().TakeExhaustedNotice()) {
    log::Info("held-file budget used up: the rest was read open/read/close",
              {{"budget", std::to_string(HeldFdBudget::Process().limit())}});
  }
  std::vector<std::string> problems;
  if (auto p = SysfsRootProblem(*report, engine.fs())) problems.push_back(std::move(*p));
  int code = CheckExitCode(*report, options.fail_on_warning, problems);
  if (options.output == "json") {
    PrintCheckJson(*report, code, out, problems);
  } else {
    PrintCheckTable(*report, out, problems);
  }
  return code;
}

}  // namespace rdmahd
