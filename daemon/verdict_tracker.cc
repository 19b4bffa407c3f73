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
  const std::vector<CheckResult>& verdicts = report->verdicts;
  auto update = [&](const CheckResult& r, Entry& e) {
    e.seen_in = gen;
    if (e.verdict != r.verdict) {
      changes.push_back({r, e.verdict});
      e.verdict = r.verdict;
    }
  };
  std::size_t i = 0;
  for (; i < verdicts.size() && i < order_.size(); ++i) {
    const CheckResult& r = verdicts[i];
    Map::value_type& node = *order_[i];
    if (node.first.subject != r.subject || node.first.check != r.check) break;
    update(r, node.second);
  }
  if (i == verdicts.size() && i == order_.size()) return changes;  // same subjects, same order

  order_.resize(i);
  order_.reserve(verdicts.size());
  for (; i < verdicts.size(); ++i) {
    const CheckResult& r = verdicts[i];
    auto it = last_.find(r);  // CheckResult has .check and .subject: compared in place
    if (it == last_.end()) {
      changes.push_back({r, std::nullopt});
      it = last_.emplace(Key{r.check, r.subject}, Entry{r.verdict, gen}).first;
    } else {
      update(r, it->second);
    }
    order_.push_back(&*it);
  }
  // Subjects that vanished (device removed) are forgotten, so their return is logged again. None
  // of them is in order_: every entry it points to was seen in this report.
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
