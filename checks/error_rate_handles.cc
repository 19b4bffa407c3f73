#include "checks/error_rate_handles.h"

namespace rdmahd::error_rates {
namespace {

SubjectHandles MakeHandles(const RuleCounters& counters, const Subject& s) {
  SubjectHandles h;
  h.instance = s.instance;
  h.rule_counters = &counters;
  h.prefix = std::string(s.check) + "/" + s.name + "/";
  h.series = History::Refs(counters.names.size() + 1);  // and the steady gauge
  return h;
}

}  // namespace

SubjectHandles& HandlesOf(std::map<std::string, SubjectHandles, std::less<>>& cache, const RuleCounters& counters,
                          const Subject& s, const History& history, SlotMaps& maps,
                          std::vector<std::optional<std::uint64_t>>& buffer) {
  auto it = cache.find(s.name);
  if (it == cache.end() || it->second.instance != s.instance) {
    SubjectHandles made = MakeHandles(counters, s);
    made.holds_possible = !history.Names(made.prefix + "failing/").empty();
    if (it == cache.end()) {
      it = cache.emplace(s.name, std::move(made)).first;
    } else {
      it->second = std::move(made);
    }
  }
  it->second.seen = true;
  it->second.values.swap(buffer);
  it->second.Load(s, maps);
  return it->second;
}

std::pair<History::TimePoint, History::TimePoint> SteadyRun(const std::vector<History::Sample>& steady, unsigned bit) {
  std::size_t i = steady.size() - 1;
  while (i > 0 && ((steady[i - 1].value >> bit) & 1) != 0) --i;
  return {steady[i].first, steady.back().last};
}

bool RecordSubject(const Subject& s, SubjectHandles& h, History::Batch& history, History::TimePoint now) {
  SubjectHandles::Leaf leaf;
  const History::Key steady_key = h.SteadyKey(leaf);
  const std::optional<History::Sample> steady = history.Newest(h.series, h.steady(), steady_key);
  const bool seen_before = steady && steady->last < now;
  const std::uint64_t steady_before = seen_before ? steady->value : 0;
  std::uint64_t steady_now = 0;
  bool continued = true;
  h.history_full = false;
  const auto record_one = [&](std::size_t i, std::uint64_t value, History::TimePoint at) {
    const History::Baseline b = history.RecordCounter(h.series, i, h.KeyOf(i), s.instance, value, at);
    if (b == History::Baseline::kRefused) h.history_full = true;
    return b;
  };
  const auto record = [&](std::size_t i, std::uint64_t value, History::TimePoint at) {
    continued = record_one(i, value, at) == History::Baseline::kContinued && continued;
  };
  for (std::size_t i = 0; i < h.counters().size(); ++i) {
    const auto& v = h.values[i];
    if (!v) continue;
    if (i >= h.error_counters()) {  // a packet counter: always recorded
      record_one(i, *v, now);
      continue;
    }
    const auto bit = static_cast<unsigned>(i);
    if (bit >= SubjectHandles::kMaxKeptCounters) {
      record(i, *v, now);
      continue;
    }
    if (!seen_before) {  // a steady run starts
      h.Kept()[i] = *v;
      steady_now |= std::uint64_t{1} << bit;
      if (*v != 0) continued = false;  // a count of unknown age: as a new series' first sample
      continue;
    }
    if (((steady_before >> bit) & 1) != 0) {
      const std::uint64_t kept = h.Kept()[i];
      if (*v == kept) {
        steady_now |= std::uint64_t{1} << bit;
        continue;
      }
      const auto [from, to] = SteadyRun(history.Samples(h.series, h.steady(), steady_key), bit);
      record(i, kept, from);
      record(i, kept, to);
    }
    record(i, *v, now);
  }
  if (!history.RecordGauge(h.series, h.steady(), steady_key, steady_now, now)) h.history_full = true;
  return continued && !h.history_full;
}

}  // namespace rdmahd::error_rates
