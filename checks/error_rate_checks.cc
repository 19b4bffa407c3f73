// The error-rate checks port_errors, roce_transport_errors and netdev_errors (checks/error_rates.h
// says what they judge): one RuleCheck each, a rule table (error_rate_rules.h) over its subjects
// (error_rate_subjects.h), and their registrations.
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "checks/error_rate_handles.h"
#include "checks/error_rate_judgement.h"
#include "checks/error_rate_rules.h"
#include "checks/error_rate_subjects.h"
#include "checks/error_rates.h"
#include "common/mutex.h"
#include "core/check.h"
#include "core/history.h"

namespace rdmahd {
namespace {

using error_rates::Finding;
using error_rates::HandlesOf;
using error_rates::Judgement;
using error_rates::Lent;
using error_rates::QuietVerdict;
using error_rates::RecordSubject;
using error_rates::RuleCounters;
using error_rates::SlotMaps;
using error_rates::Subject;
using error_rates::SubjectFn;
using error_rates::SubjectHandles;

// One check: `kRules` over the subjects `kSubjects` lists. Record judges each subject (it must:
// a failed rule is recorded for the hold) and keeps the verdicts for EvaluateOverTime of the same
// collection, so that a scrape judges once; evaluated without its Record (no history), it judges
// afresh.
template <const auto& kRules, void (*kSubjects)(const Snapshot&, const SubjectFn&)>
class RuleCheck : public Check {
 public:
  void Record(const Snapshot& snapshot, const Config& config, History& history, History::TimePoint now) const override {
    const auto& policy = config.Section<ErrorRatePolicy>();
    std::vector<CheckResult> results;
    {
      MutexLock lock(handles_mu_);
      const bool same_policy = policy_ && *policy_ == policy;
      policy_ = policy;
      kSubjects(snapshot, [&](const Subject& s) {
        handles_mu_.AssertHeld();  // kSubjects calls it before it returns, in this scope
        SubjectHandles& h = HandlesOf(handles_, Counters(), s, history, slot_maps_, values_);
        const Lent lent(h, values_);
        // The history's lock once for the subject's few dozen calls, not once per call.
        History::Batch batch(history);
        const bool continued = RecordSubject(s, h, batch, now);
        const bool all_read = s.AllRead();
        if (h.quiet && continued && all_read && h.QuietValuesHold() && same_policy) {
          if (h.quiet_counters > 0) results.push_back(QuietVerdict(s.name, h.quiet_counters));
          return;
        }
        Judgement j = Judge(kRules, h, batch, now, policy);
        for (const Finding& f : j.findings) {
          if (f.verdict != Verdict::kFailed) continue;
          batch.RecordGauge(h.Held(f.key), 1, now);
          h.holds_possible = true;
        }
        const bool quiet = all_read && j.findings.empty() && j.unknown.empty() && j.rose.empty();
        const std::size_t judged = j.counters;
        std::optional<CheckResult> r = Verdicts(kRules, s, h, batch, now, policy, std::move(j));
        h.quiet = quiet && (!r || r->verdict == Verdict::kOk) &&
                  h.error_counters() <= SubjectHandles::kMaxKeptCounters;
        if (h.quiet) {
          h.KeepQuietValues();
          h.quiet_counters = r ? static_cast<std::uint32_t>(judged) : 0;
        }
        if (r) results.push_back(std::move(*r));
      });
      // The handles of subjects gone from this collection go too: the cache holds this node's subjects.
      for (auto it = handles_.begin(); it != handles_.end();) {
        it = std::exchange(it->second.seen, false) ? std::next(it) : handles_.erase(it);
      }
      slot_maps_.Prune();
    }
    MutexLock lock(mu_);
    recorded_at_ = now;
    recorded_ = std::move(results);
  }
  void EvaluateOverTime(const CheckContext& ctx, std::vector<CheckResult>& out) const override {
    {
      MutexLock lock(mu_);
      if (recorded_at_ && *recorded_at_ == ctx.now) {
        // Once: the next collection records anew.
        std::move(recorded_.begin(), recorded_.end(), std::back_inserter(out));
        recorded_ = std::vector<CheckResult>();  // and its room: a verdict per subject
        recorded_at_.reset();
        return;
      }
    }
    const auto& policy = ctx.config.Section<ErrorRatePolicy>();
    // Handles for this evaluation only: the kept ones are Record's (its subjects, its history).
    std::map<std::string, SubjectHandles, std::less<>> handles;
    SlotMaps maps;
    std::vector<std::optional<std::uint64_t>> values;
    kSubjects(ctx.snapshot, [&](const Subject& s) {
      SubjectHandles& h = HandlesOf(handles, Counters(), s, ctx.history, maps, values);
      const Lent lent(h, values);
      if (auto r = Verdicts(kRules, s, h, ctx.history, ctx.now, policy,
                            Judge(kRules, h, ctx.history, ctx.now, policy))) {
        out.push_back(std::move(*r));
      }
    });
  }

 private:
  static const RuleCounters& Counters() {
    static const RuleCounters counters = CountersOf(kRules);
    return counters;
  }
  mutable Mutex handles_mu_;
  mutable std::map<std::string, SubjectHandles, std::less<>> handles_ GUARDED_BY(handles_mu_);
  mutable SlotMaps slot_maps_ GUARDED_BY(handles_mu_);
  mutable std::vector<std::optional<std::uint64_t>> values_ GUARDED_BY(handles_mu_);  // lent (HandlesOf)
  mutable std::optional<ErrorRatePolicy> policy_ GUARDED_BY(handles_mu_);  // the last Record's
  mutable Mutex mu_;
  mutable std::optional<History::TimePoint> recorded_at_ GUARDED_BY(mu_);
  mutable std::vector<CheckResult> recorded_ GUARDED_BY(mu_);
};

using PortErrorsCheck = RuleCheck<error_rates::kPortRules, error_rates::PortCounterSubjects>;
using RoceTransportErrorsCheck = RuleCheck<error_rates::kTransportRules, error_rates::PortHwCounterSubjects>;
using NetdevErrorsCheck = RuleCheck<error_rates::kNetdevRules, error_rates::NetdevSubjects>;

}  // namespace

RDMAHD_REGISTER_CHECK("port_errors", PortErrorsCheck,
                      "no IB PMA error counter of a port rising above its limit (symbol errors, link recoveries, "
                      "receive errors, discards)");
RDMAHD_REGISTER_CHECK("roce_transport_errors", RoceTransportErrorsCheck,
                      "no RDMA transport error counter (hw_counters) rising above its limit: retries exceeded, "
                      "loss and retransmission, receive queues empty, application errors");
RDMAHD_REGISTER_CHECK("netdev_errors", NetdevErrorsCheck,
                      "no PHY, buffer or PCIe error statistic of a port's netdev rising above its limit");

}  // namespace rdmahd
