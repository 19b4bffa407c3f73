#include "daemon/verdict_tracker.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "core/collection_engine.h"
#include "daemon/logging.h"

namespace rdmahd {

namespace {

bool KeyLess(const CheckResult* a, const CheckResult* b) {
  return std::tie(a->check, a->subject) < std::tie(b->check, b->subject);
}

}  // namespace

std::vector<VerdictChange> VerdictTracker::Observe(const std::shared_ptr<const Report>& report) {
  std::lock_guard lock(mu_);
  std::vector<VerdictChange> changes;
  if (!report || report == last_) return changes;
  const std::shared_ptr<const Report> previous = std::exchange(last_, report);
  static const std::vector<CheckResult> kNone;
  const std::vector<CheckResult>& before = previous ? previous->verdicts : kNone;
  const std::vector<CheckResult>& now = report->verdicts;
  auto compare = [&](const CheckResult& r, const CheckResult* was) {
    if (was == nullptr) {
      changes.push_back({r, std::nullopt});
    } else if (was->verdict != r.verdict) {
      changes.push_back({r, was->verdict});
    }
  };
  // A report lists its subjects in the same order as the one before while nothing was added or
  // removed: matched by position with two string equalities each.
  std::size_t i = 0;
  for (; i < now.size() && i < before.size(); ++i) {
    if (now[i].subject != before[i].subject || now[i].check != before[i].check) break;
    compare(now[i], &before[i]);
  }
  if (i == now.size()) return changes;
  // From the first difference on, by (check, subject) among the rest of the previous report. A
  // subject the previous report did not have (new, or back after it vanished) is a first sighting.
  std::vector<const CheckResult*> rest;
  rest.reserve(before.size() - std::min(i, before.size()));
  for (std::size_t k = i; k < before.size(); ++k) rest.push_back(&before[k]);
  std::sort(rest.begin(), rest.end(), KeyLess);
  for (; i < now.size(); ++i) {
    auto it = std::lower_bound(rest.begin(), rest.end(), &now[i], KeyLess);
    const bool found = it != rest.end() && (*it)->check == now[i].check && (*it)->subject == now[i].subject;
    compare(now[i], found ? *it : nullptr);
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
