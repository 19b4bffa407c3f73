#include "daemon/verdict_tracker.h"


#include "core/collection_engine.h"
#include "daemon/logging.h"

namespace rdmahd {

std::vector<VerdictChange> VerdictTracker::Observe(const std::shared_ptr<const Report>& report) {
  std::lock_guard lock(mu_);
  std::vector<VerdictChange> changes;
  if (!report || report.get() == last_report_) return changes;
  last_report_ = report.get();
  keep_alive_ = report;  // so the address cannot be reused by a later report

  const std::uint64_t gen = ++generation_;
  for (const CheckResult& r : report->verdicts) {
    auto it = last_.find(r);  // CheckResult has .check and .subject: compared in place
    if (it == last_.end()) {
      changes.push_back({r, std::nullopt});
      last_.emplace(Key{r.check, r.subject}, Entry{r.verdict, gen});
      continue;
    }
    it->second.seen_in = gen;
    if (it->second.verdict != r.verdict) {
      changes.push_back({r, it->second.verdict});
      it->second.verdict = r.verdict;
    }
  }
  // Subjects that vanished (device removed) are forgotten, so their return is logged again.
  std::erase_if(last_, [gen](const auto& kv) { return kv.second.seen_in != gen; });
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
