// The judgement of one subject of an error-rate check over its window (checks/error_rates.h says
// how each rule is judged): Judge asks the history each counter's increase and says which rules
// tripped, which are unknown and which counters rose; Verdicts makes the subject's one verdict of
// that, the rules held failed, and the counters in read backoff or holding no number. Both are
// templates over a rule table and `Hist`: a History, or a History::Batch holding its lock.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "checks/error_rate_handles.h"
#include "checks/error_rate_rules.h"
#include "checks/error_rate_subjects.h"
#include "checks/error_rates.h"
#include "common/duration_text.h"
#include "core/check.h"
#include "core/history.h"
#include "facts/read_backoff_reason.h"

namespace rdmahd::error_rates {

// a + b, or the largest count when that does not fit: two counters of one rule that rose by 2^63
// each (a driver's garbage, a wrapped read) must not sum to 0 and read as nothing counted.
constexpr std::uint64_t SaturatingAdd(std::uint64_t a, std::uint64_t b) {
  return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

// "0.05%", "1.2%", "250%": a share as a percentage, two significant digits below 100.
std::string Percent(double fraction);

struct Finding {
  Verdict verdict = Verdict::kOk;
  std::string_view key;
  std::string text;
  std::string_view fix;
};

struct Judgement {
  std::vector<Finding> findings;  // rules that tripped now
  std::vector<std::string_view> unknown;  // rules whose window has fewer than two samples
  std::size_t counters = 0;       // counters judged
  std::string rose;               // "port_rcv_errors +3, ..." for counters that grew but tripped nothing
};

// The window rule `r` is judged over: an hour, a minute, or policy.window.
History::Clock::duration RuleWindow(const Rule& r, const ErrorRatePolicy& policy);

// `Hist`: a History, or a History::Batch holding its lock.
template <std::size_t N, class Hist>
Judgement Judge(const std::array<Rule, N>& rules, SubjectHandles& h, const Hist& history,
                History::TimePoint now, const ErrorRatePolicy& policy) {
  Judgement j;
  std::vector<std::string_view> seen;  // counters already counted in j.counters / j.rose
  // Each counter's increase over each window, asked of the history once (rules share counters).
  struct Known {
    std::string_view counter;
    History::Clock::duration window;
    std::optional<History::Growth> growth;
  };
  std::vector<Known> known_increases;
  // The steady gauge as the last Record left it, asked once: an error counter whose bit is set has
  // no series and stood at one value over the run of collections the gauge saw the bit in.
  SubjectHandles::Leaf leaf;
  const History::Key steady_key = h.SteadyKey(leaf);
  const std::optional<History::Sample> steady = history.Newest(h.series, h.steady(), steady_key);
  std::vector<History::Sample> steady_samples;  // asked only when a run may start within a window
  auto steady_increase = [&](unsigned bit, History::Clock::duration window) {
    // What History::Increase gives a series of that one value over the run.
    const History::TimePoint start = now - window;
    History::TimePoint from = steady->first;
    if (from > start) {  // the run may have begun before the gauge's newest sample
      if (steady_samples.empty()) steady_samples = history.Samples(h.series, h.steady(), steady_key);
      from = SteadyRun(steady_samples, bit).first;
    }
    const History::Sample run{from, steady->last, 0, 0};
    return History::Between(run, run, start);
  };
  auto increase_of = [&](std::string_view c, History::Clock::duration window) {
    for (const Known& k : known_increases) {
      if (k.counter == c && k.window == window) return k.growth;
    }
    const std::size_t i = h.IndexOf(c);
    const bool is_steady = i < h.error_counters() && i < SubjectHandles::kMaxKeptCounters && steady &&
                           ((steady->value >> i) & 1) != 0;
    known_increases.push_back({c, window,
                               is_steady ? steady_increase(static_cast<unsigned>(i), window)
                                         : history.Increase(h.series, i, h.KeyOf(i), window, now)});
    return known_increases.back().growth;
  };
  for (const Rule& r : rules) {
    const auto window = RuleWindow(r, policy);
    std::uint64_t increase = 0;
    double seconds = 0;
    bool present = false, known = true;
    std::string parts;  // "local_ack_timeout_err +3, packet_seq_err +1"
    for (std::string_view c : r.counters) {
      const std::optional<std::uint64_t> value = h.Value(c);
      if (!value) continue;
      present = true;
      // A counter at 0 counted nothing since it was cleared, so nothing in any window: no need
      // to ask the history (most error counters of a healthy port are 0).
      const auto g = *value == 0 ? std::optional<History::Growth>(History::Growth{}) : increase_of(c, window);
      if (!g) {
        known = false;
        continue;
      }
      increase = SaturatingAdd(increase, g->increase);
      seconds = std::max(seconds, g->seconds);
      if (g->increase > 0) parts += (parts.empty() ? "" : ", ") + std::string(c) + " +" + std::to_string(g->increase);
      if (std::find(seen.begin(), seen.end(), c) == seen.end()) {
        seen.push_back(c);
        ++j.counters;
        if (g->increase > 0) j.rose += (j.rose.empty() ? "" : ", ") + std::string(c) + " +" + std::to_string(g->increase);
      }
    }
    if (!present) continue;
    if (!known) {
      if (std::find(j.unknown.begin(), j.unknown.end(), r.key) == j.unknown.end()) j.unknown.push_back(r.key);
      continue;
    }
    if (increase == 0) continue;
    const std::string what = (parts.find(',') == std::string::npos && parts.starts_with(r.key))
                                 ? parts
                                 : std::string(r.key) + " (" + parts + ")";
    std::string text = what + " in " + FormatSeconds(seconds);
    bool tripped = false;
    switch (r.test) {
      case Test::kAnyIncrease:
        tripped = true;
        break;
      case Test::kPerHour:
      case Test::kPerMinute: {
        // A limit of N within the window is judged on the increase observed within it, whatever
        // the span that observed it: more than N has happened (however short the span), N or fewer
        // is not more than N (however short the span). A short span is never scaled up to a rate.
        const std::uint32_t limit = policy.*(r.limit);
        tripped = increase > limit;
        text += ", more than " + std::to_string(limit) + (r.test == Test::kPerHour ? " within an hour" : " within a minute");
        break;
      }
      case Test::kShare: {
        const double threshold = policy.*(r.share);
        std::optional<std::uint64_t> packets;
        bool packets_known = true;
        for (const auto& alternative : PacketCounters(r.packets)) {
          if (!std::all_of(alternative.begin(), alternative.end(), [&](std::string_view c) { return h.Value(c).has_value(); })) {
            continue;
          }
          std::uint64_t sum = 0;
          for (std::string_view c : alternative) {
            const auto g = increase_of(c, window);
            if (!g) packets_known = false;
            if (g) sum = SaturatingAdd(sum, g->increase);
          }
          packets = sum;
          break;
        }
        if (!packets) {
          tripped = true;
          text += " (no packet counter to take a share of)";
        } else if (!packets_known) {
          if (std::find(j.unknown.begin(), j.unknown.end(), r.key) == j.unknown.end()) j.unknown.push_back(r.key);
        } else if (*packets >= policy.min_packets) {
          const double share = static_cast<double>(increase) / static_cast<double>(*packets);
          tripped = share > threshold;
          text += ", " + Percent(share) + " of the " + std::to_string(*packets) + " packets " +
                  std::string(Direction(r.packets)) + " (limit " + Percent(threshold) + ")";
        }
        break;
      }
    }
    if (!tripped) continue;
    text += ": ";
    text += r.meaning;
    // A warning of a rule whose failed level tripped too says nothing more.
    const bool covered = std::any_of(j.findings.begin(), j.findings.end(), [&](const Finding& f) {
      return f.key == r.key && f.verdict == Verdict::kFailed;
    });
    if (!covered) j.findings.push_back({r.verdict, r.key, std::move(text), r.fix});
  }
  return j;
}
// The reason of an ok verdict: `counters` error counters judged, those in `rose` ("symbol_error
// +2, ...") grew without tripping a rule.
std::string OkReason(std::size_t counters, const std::string& rose);

// The files of `files` that `needed(file)` selects, as "counters/symbol_error holds no count (...)" (at
// most four named, then "and N more"); empty when none is. Names only: never what the files hold.
template <class Needed>
std::string NotNumbersReason(const std::vector<std::string>& files, const Needed& needed) {
  std::string out;
  std::size_t named = 0, more = 0;
  for (const std::string& f : files) {
    if (!needed(f)) continue;
    if (named == 4) {
      ++more;
      continue;
    }
    out += (named++ == 0 ? "" : ", ") + f;
  }
  if (named == 0) return out;
  if (more != 0) out += " and " + std::to_string(more) + " more";
  return out + (named + more == 1 ? " holds no count (not a number, or unreadable)"
                                  : " hold no count (not numbers, or unreadable)");
}
// The verdict of a subject whose `counters` error counters were judged and none rose.
CheckResult QuietVerdict(const std::string& subject, std::size_t counters);

// `fix` with every NETDEV replaced by `netdev` (unchanged when it is empty).
std::string ReplaceNetdev(std::string_view fix, const std::string& netdev);

// The verdict of one subject: the rules that tripped now, those held failed, else unknown or ok.
// Nothing for a subject without any of the rules' counters (another driver, no PMA).
template <std::size_t N, class Hist>
std::optional<CheckResult> Verdicts(const std::array<Rule, N>& rules, const Subject& s, SubjectHandles& h,
                                    const Hist& history, History::TimePoint now, const ErrorRatePolicy& policy,
                                    Judgement j) {
  CheckResult r{"", s.name, Verdict::kOk, "", ""};
  const auto hold = std::chrono::duration_cast<History::Clock::duration>(policy.hold);
  std::vector<std::string_view> held_keys;
  // The rules that failed within the hold.
  for (const Rule& rule : rules) {
    if (rule.verdict != Verdict::kFailed) continue;
    if (std::find(held_keys.begin(), held_keys.end(), rule.key) != held_keys.end()) continue;
    const bool now_failing = std::any_of(j.findings.begin(), j.findings.end(), [&](const Finding& f) {
      return f.key == rule.key && f.verdict == Verdict::kFailed;
    });
    if (now_failing || !h.holds_possible) continue;
    const std::optional<History::Sample> failed = history.Newest(h.Held(rule.key));
    if (!failed || now - failed->last >= hold) continue;
    held_keys.push_back(rule.key);
    const double ago = std::chrono::duration<double>(now - failed->last).count();
    // The rule's warning level, if it tripped now, is part of the held failure.
    std::erase_if(j.findings, [&](const Finding& f) { return f.key == rule.key; });
    j.findings.push_back({Verdict::kFailed, rule.key,
                          std::string(rule.key) + " was over its limit until " + FormatSeconds(ago) + " ago (held failed for " +
                              FormatSeconds(std::chrono::duration<double>(hold).count()) + " after it falls back)",
                          rule.fix});
  }
  // The files of the rules' counters (and of the packet counters of shares): "counters/symbol_error".
  const auto needed = [&](const std::string& file) {
    const auto slash = file.find('/');
    if (slash == std::string::npos) return false;
    const std::string_view dir = std::string_view(file).substr(0, slash + 1), name = std::string_view(file).substr(slash + 1);
    if (std::find(s.backoff_dirs.begin(), s.backoff_dirs.end(), dir) == s.backoff_dirs.end()) return false;
    return std::any_of(rules.begin(), rules.end(), [&](const Rule& rule) {
      if (std::find(rule.counters.begin(), rule.counters.end(), name) != rule.counters.end()) return true;
      for (const auto& alternative : PacketCounters(rule.packets)) {
        if (std::find(alternative.begin(), alternative.end(), name) != alternative.end()) return true;
      }
      return false;
    });
  };
  // Those whose reads are in backoff, and those whose text is not a number.
  std::string backoff;
  if (s.backoff != nullptr && !s.backoff->empty()) backoff = BackedOffReason(*s.backoff, needed);
  const std::string not_numbers = s.unparseable != nullptr ? NotNumbersReason(*s.unparseable, needed) : "";
  if (j.findings.empty() && j.counters == 0 && j.unknown.empty() && backoff.empty() && not_numbers.empty()) {
    return std::nullopt;
  }
  if (!j.findings.empty()) {
    std::stable_sort(j.findings.begin(), j.findings.end(), [](const Finding& a, const Finding& b) {
      return (a.verdict == Verdict::kFailed) > (b.verdict == Verdict::kFailed);
    });
    r.verdict = j.findings.front().verdict;
    std::vector<std::string_view> fixes;
    for (const Finding& f : j.findings) {
      r.reason += (r.reason.empty() ? "" : "; ") + f.text;
      if (std::find(fixes.begin(), fixes.end(), f.fix) == fixes.end()) fixes.push_back(f.fix);
    }
    for (std::string_view f : fixes) r.fix += (r.fix.empty() ? "" : "; ") + ReplaceNetdev(f, s.netdev);
    return r;
  }
  if (!backoff.empty() || !not_numbers.empty()) {
    // A counter that cannot be read, or whose file holds no number, is not a counter that did not rise.
    r.verdict = Verdict::kUnknown;
    r.reason = "cannot judge every error counter: " + not_numbers + (not_numbers.empty() || backoff.empty() ? "" : "; ") +
               backoff;
    if (!not_numbers.empty()) {
      r.fix = "the driver wrote something other than a count into these files (od -c shows what they hold): update "
              "the driver and the NIC's firmware, and report it to their maintainers";
    }
    if (!backoff.empty()) {
      r.fix += std::string(r.fix.empty() ? "" : "; ") +
               "a port in switch mode or a restricted PF (DGX/HGX) refuses these reads; read the counters where the "
               "port is managed, or let the retries find them readable again";
    }
    return r;
  }
  if (!j.unknown.empty() && h.history_full) {
    r.verdict = Verdict::kUnknown;
    r.reason = "no increase known: the engine's history is full (it keeps at most " +
               std::to_string(history.limits().max_series) +
               " series, and every one was recorded in this collection), so it has no room for this subject's "
               "counters";
    r.fix = "raise history.max_series in the configuration (each series costs about 150 bytes while its counter "
            "does not move, at most 2.2 KB)";
    return r;
  }
  if (!j.unknown.empty()) {
    r.verdict = Verdict::kUnknown;
    // Named when some rules were judged: the others' windows missed a sample.
    r.reason = "no increase known yet";
    for (std::size_t i = 0; j.counters > 0 && i < j.unknown.size(); ++i) {
      r.reason += (i ? ", " : " for ") + std::string(j.unknown[i]);
    }
    r.reason += ": a rate needs two samples within its window (`rdma-healthd check --sample-interval=10s` takes two)";
    // What the counters hold since they were last cleared, for the operator's first look.
    std::string totals;
    std::size_t shown = 0;
    for (const Rule& rule : rules) {
      for (std::string_view c : rule.counters) {
        if (c.empty() || totals.find(std::string(c) + " ") != std::string::npos) continue;
        const auto v = h.Value(c);
        if (!v || *v == 0 || shown == 8) continue;
        totals += (totals.empty() ? "" : ", ") + std::string(c) + " " + std::to_string(*v);
        ++shown;
      }
    }
    if (!totals.empty()) r.reason += "; counted since the last clear: " + totals;
    return r;
  }
  r.reason = OkReason(j.counters, j.rose);
  return r;
}

}  // namespace rdmahd::error_rates
