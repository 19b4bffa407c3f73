#include "daemon/verdict_tracker.h"

#include <set>

#include "collectors/collection_engine.h"
#include "daemon/logging.h"

namespace rdmahd {

std::vector<VerdictChange> VerdictTracker::Observe(const std::shared_ptr<const Report>& report) {
  std::lock_guard lock(mu_);
  std::vector<VerdictChange> changes;
  if (!report || report.get() == last_report_) return changes;
  last_report_ = report.get();
  keep_alive_ = report;  // so the address cannot be reused by a later report

  std::set<std::pair<std::string, std::string>> seen;
  for (const CheckResult& r : report->verdicts) {
    auto key = std::make_pair(r.check, r.subject);
    seen.insert(key);
    auto it = last_.find(key);
    if (it == last_.end()) {
      changes.push_back({r, std::nullopt});
      last_.emplace(key, r.verdict);
    } else if (it->second != r.verdict) {
      changes.push_back({r, it->second});
      it->second = r.verdict;
    }
  }
  // Subjects that vanished (device removed) are forgotten, so their return is logged again.
  for (auto it = last_.begin(); it != last_.end();) {
    it = seen.count(it->first) ? std::next(it) : last_.erase(it);
  }
  return changes;
}

void VerdictTracker::ObserveAndLog(const std::shared_ptr<const Report>& report) {
  for (const VerdictChange& c : Observe(report)) {
    if (!c.before && c.now.verdict == Verdict::kOk) continue;  // quiet start on a healthy node
    auto level = c.now.verdict == Verdict::kFailed    ? spdlog::level::err
                 : c.now.verdict == Verdict::kWarning ? spdlog::level::warn
                                                      : spdlog::level::info;
    std::string before = c.before ? std::string(VerdictName(*c.before)) : "none";
    log::Write(level, "check verdict changed",
               {{"check", c.now.check},
                {"subject", c.now.subject},
                {"verdict", VerdictName(c.now.verdict)},
                {"previous", before},
                {"reason", c.now.reason},
                {"fix", c.now.fix}});
  }
}

}  // namespace rdmahd
