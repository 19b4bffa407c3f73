#include "daemon/check_command.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>

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
  std::size_t wc = 5, ws = 7;
  for (const CheckResult& r : report.verdicts) {
    wc = std::max(wc, r.check.size());
    ws = std::max(ws, r.subject.size());
  }
  auto pad = [](std::string_view s, std::size_t w) {
    std::string p(s);
    p.resize(std::max(w, s.size()), ' ');
    return p;
  };
  out << pad("CHECK", wc) << "  " << pad("SUBJECT", ws) << "  " << pad("STATUS", 7) << "  REASON\n";
  std::map<Verdict, int> counts;
  for (const CheckResult& r : report.verdicts) {
    ++counts[r.verdict];
    out << pad(r.check, wc) << "  " << pad(r.subject, ws) << "  " << pad(VerdictName(r.verdict), 7)
        << "  " << r.reason << "\n";
    if (r.verdict != Verdict::kOk && !r.fix.empty()) {
      out << pad("", wc) << "  " << pad("", ws) << "  " << pad("", 7) << "  fix: " << r.fix << "\n";
    }
  }
  for (const CollectorOutcome& o : report.snapshot.outcomes) {
    if (!o.success) {
      out << "collector " << o.collector << " failed: " << (o.errors.empty() ? "" : o.errors.back())
          << "\n";
    }
  }
  for (const std::string& p : problems) out << "cannot judge this node: " << p << "\n";
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
  out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
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
