#include "daemon/verdict_tracker.h"

#include <algorithm>
#include <optional>
#include <tuple>
#include <utility>

#include "common/logging.h"
#include "common/mutex.h"
#include "core/collection_engine.h"

namespace rdmahd {

std::vector<VerdictChange> VerdictTracker::Observe(const std::shared_ptr<const Report>& report) {
  MutexLock lock(mu_);
  std::vector<VerdictChange> changes;
  if (!report || report == last_) return changes;
  const std::shared_ptr<const Report> previous = std::exchange(last_, report);
  static const VerdictList kNone;
  const VerdictList& before = previous ? previous->verdicts : kNone;
  const VerdictList& now = report->verdicts;
  auto compare = [&](const VerdictView& r, const std::optional<VerdictView>& was) {
    if (!was) {
      changes.push_back({r.ToResult(), std::nullopt});
    } else if (was->verdict != r.verdict) {
      changes.push_back({r.ToResult(), was->verdict});
    }
  };
  // A report lists its subjects in the same order as the one before while nothing was added or
  // removed: matched by position with two string equalities each.
  std::size_t i = 0;
  for (; i < now.size() && i < before.size(); ++i) {
    const VerdictView n = now[i], b = before[i];
    if (n.subject != b.subject || n.check != b.check) break;
    compare(n, b);
  }
  if (i == now.size()) return changes;
  // From the first difference on, by (check, subject) among the rest of the previous report. A
  // subject the previous report did not have (new, or back after it vanished) is a first sighting.
  auto key = [](const VerdictView& v) { return std::tie(v.check, v.subject); };
  std::vector<VerdictView> rest(before.begin() + static_cast<std::ptrdiff_t>(std::min(i, before.size())), before.end());
  std::sort(rest.begin(), rest.end(), [&](const VerdictView& a, const VerdictView& b) { return key(a) < key(b); });
  for (; i < now.size(); ++i) {
    const VerdictView n = now[i];
    auto it = std::lower_bound(rest.begin(), rest.end(), n,
                               [&](const VerdictView& a, const VerdictView& b) { return key(a) < key(b); });
    const bool found = it != rest.end() && it->check == n.check && it->subject == n.subject;
    compare(n, found ? std::optional<VerdictView>(*it) : std::nullopt);
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
