// What the error-rate checks keep per subject from one collection to the next: the history
// handles of its series (SubjectHandles), the slots of its counters in each counter name list
// (SlotMaps), and the recording of its counters (RecordSubject), where a counter that has not moved
// gets no series but a bit in the subject's "steady@<instance>" gauge. Not thread-safe: a check
// guards its handles with its own lock.
#pragma once

#include <algorithm>
#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "checks/error_rate_rules.h"
#include "checks/error_rate_subjects.h"
#include "core/history.h"

namespace rdmahd::error_rates {

// Where each of a check's counters is among a CounterValues' slots, per name list. A name list is
// shared by the ports of a driver and by every collection until the device is discovered anew: its
// slots are found once for all of them, not searched by name for every counter of every port.
// Holding a list keeps it from being freed, so another list cannot take its address.
class SlotMaps {
 public:
  static constexpr std::uint32_t kAbsent = UINT32_MAX;
  using Map = std::vector<std::uint32_t>;  // per counter; kAbsent when the list lacks it

  // The slots of `counters` in `values`' name list; nullptr when it has none. Valid until the
  // next call.
  const Map* Of(const CounterValues& values, const std::vector<std::string_view>& counters) {
    if (!values.names()) return nullptr;
    auto it = maps_.find(values.names().get());
    if (it == maps_.end()) {
      Map of;
      for (std::string_view c : counters) {
        const std::optional<std::size_t> slot = values.SlotOf(c);
        of.push_back(slot && *slot < kAbsent ? static_cast<std::uint32_t>(*slot) : kAbsent);
      }
      it = maps_.emplace(values.names().get(), Entry{values.names(), std::move(of)}).first;
    }
    return &it->second.of;
  }
  static std::optional<std::uint64_t> Value(const CounterValues& values, const Map& of, std::size_t i) {
    return of[i] != kAbsent ? values.value(of[i]) : std::nullopt;
  }
  // Drops the maps of lists that only these maps still hold (their devices were discovered anew).
  void Prune() {
    std::erase_if(maps_, [](const auto& m) { return m.second.names.use_count() == 1; });
  }

 private:
  struct Entry {
    std::shared_ptr<const CounterValues::Names> names;
    Map of;
  };
  std::map<const CounterValues::Names*, Entry> maps_;
};

// The rules' counters, each once: first the error counters (a counter's place among them is its
// bit in the steady gauge), then the packet counters of the shares. The same for every subject of a
// check: made once per rule table.
struct RuleCounters {
  std::vector<std::string_view> names;
  std::size_t errors = 0;  // names[0, errors) are the error counters
};

template <std::size_t N>
RuleCounters CountersOf(const std::array<Rule, N>& rules) {
  RuleCounters out;
  auto add = [&out](std::string_view c) {
    if (!c.empty() && std::find(out.names.begin(), out.names.end(), c) == out.names.end()) out.names.push_back(c);
  };
  for (const Rule& r : rules) {
    for (std::string_view c : r.counters) add(c);
  }
  out.errors = out.names.size();
  for (const Rule& r : rules) {
    for (const auto& alternative : PacketCounters(r.packets)) {
      for (std::string_view c : alternative) add(c);
    }
  }
  return out;
}

// The history handles of one subject's series, kept by its check from one collection to the next:
// a port records and asks some twenty counters per collection, and formatting and looking up each
// name every time costs more than judging them.
struct SubjectHandles {
  std::uint64_t instance = 0;
  std::string prefix;  // "<check>/<subject>/"
  const RuleCounters* rule_counters = nullptr;  // the check's (static)
  const std::vector<std::string_view>& counters() const { return rule_counters->names; }
  std::size_t error_counters() const { return rule_counters->errors; }
  // counters()[i]'s, named prefix + counters()[i] (KeyOf), and last the steady gauge's, named
  // prefix + "steady@<instance>" (SteadyKey; in the subject's own dir, beside its counters' series,
  // and no counter is named so): no name kept per series, for each subject of thousands.
  History::Refs series;
  History::Key KeyOf(std::size_t i) const { return {prefix, counters()[i]}; }
  std::size_t steady() const { return counters().size(); }
  struct Leaf {
    std::array<char, 32> chars;  // "steady@" and 20 digits at most
    std::size_t size = 0;
  };
  History::Key SteadyKey(Leaf& leaf) const {
    constexpr std::string_view kTag = "steady@";
    char* at = std::copy(kTag.begin(), kTag.end(), leaf.chars.begin());
    leaf.size = static_cast<std::size_t>(std::to_chars(at, leaf.chars.data() + leaf.chars.size(), instance).ptr -
                                         leaf.chars.data());
    return {prefix, std::string_view(leaf.chars.data(), leaf.size)};
  }
  // counters[i]'s in this collection (Load): the check's one buffer, lent to the subject being
  // judged (HandlesOf) and handed back (Lent), not a copy kept per subject between collections.
  std::vector<std::optional<std::uint64_t>> values;
  std::vector<std::pair<std::string_view, History::Handle>> held;  // hold series by rule key (Held)
  bool seen = false;  // a subject of the latest collection
  // The history had no room for one of these series in the latest collection.
  bool history_full = false;
  // Quiet: the last judgement found every rule known and no error counter risen, nothing held and
  // nothing in read backoff, under the check's policy (a new policy judges every subject anew).
  // While the error counters stay at the `kept` values, no window can hold an increase of one (and
  // a share of packets is only taken of an increase), so the verdict is ok again (QuietVerdict, of
  // `quiet_counters` counters; none when 0) without asking the history, however the packets move.
  bool quiet = false;
  std::uint32_t quiet_counters = 0;
  // The first kMaxKeptCounters error counters' values (values[0, error_counters)): a steady
  // counter's (its bit set in the steady gauge) is the value its steady run stands at; the others'
  // are as of the last quiet judgement, where bit i of quiet_present says whether counter i had
  // one. A check of more error counters is never quiet.
  std::unique_ptr<std::uint64_t[]> kept;
  std::uint64_t quiet_present = 0;
  static constexpr std::size_t kMaxKeptCounters = 64;
  std::uint64_t* Kept() {
    if (!kept) kept = std::make_unique<std::uint64_t[]>(error_counters());
    return kept.get();
  }
  void KeepQuietValues() {
    std::uint64_t* out = Kept();
    quiet_present = 0;
    for (std::size_t i = 0; i < error_counters(); ++i) {
      out[i] = values[i].value_or(0);
      if (values[i]) quiet_present |= std::uint64_t{1} << i;
    }
  }
  bool QuietValuesHold() const {
    if (!kept) return false;
    for (std::size_t i = 0; i < error_counters(); ++i) {
      const bool present = ((quiet_present >> i) & 1) != 0;
      if (values[i].has_value() != present || (present && *values[i] != kept[i])) return false;
    }
    return true;
  }

  std::size_t IndexOf(std::string_view counter) const {
    const std::vector<std::string_view>& counters = this->counters();
    if (counter.empty()) return counters.size();  // a rule's unused place
    // The rules' names are the very string_views `counters` was made of: their addresses match.
    for (std::size_t i = 0; i < counters.size(); ++i) {
      if (counters[i].data() == counter.data() && counters[i].size() == counter.size()) return i;
    }
    return static_cast<std::size_t>(std::find(counters.begin(), counters.end(), counter) - counters.begin());
  }
  // The subject's value of one of the rules' counters, as Load found it.
  std::optional<std::uint64_t> Value(std::string_view counter) const {
    const std::size_t i = IndexOf(counter);
    return i < values.size() ? values[i] : std::nullopt;
  }
  // Reads the subject's counters once for recording and judging; a port's by the slots of its
  // counters' name lists in `maps`.
  void Load(const Subject& s, SlotMaps& maps) {
    const std::vector<std::string_view>& counters = this->counters();
    values.resize(counters.size());
    if (s.counters == nullptr) {
      for (std::size_t i = 0; i < counters.size(); ++i) values[i] = s.value(counters[i]);
      return;
    }
    const SlotMaps::Map* of = maps.Of(*s.counters, counters);
    for (std::size_t i = 0; i < counters.size(); ++i) {
      values[i] = of != nullptr ? SlotMaps::Value(*s.counters, *of, i) : std::nullopt;
    }
    if (s.fallback == nullptr) return;
    const SlotMaps::Map* fallback = maps.Of(*s.fallback, counters);
    for (std::size_t i = 0; fallback != nullptr && i < counters.size(); ++i) {
      if (!values[i]) values[i] = SlotMaps::Value(*s.fallback, *fallback, i);
    }
  }
  // Whether a hold series of this subject may exist: one was there when the handles were made (a
  // failure held across a re-created device), or one was recorded since. Most ports never fail a
  // rule, and asking for each failed-kind rule's hold series would make a named handle for each.
  bool holds_possible = false;
  // The hold series of rule `key` (made at its first use: a handle is made before its series is).
  History::Handle& Held(std::string_view key) {
    for (auto& [k, h] : held) {
      if (k == key) return h;
    }
    return held.emplace_back(key, History::Handle(prefix + "failing/" + std::string(key))).second;
  }
};

// The subject's handles in `cache` (by subject name), made anew for a new subject or instance,
// with its values loaded (by `maps`) into `buffer`, which they hold until the caller's Lent hands it
// back.
SubjectHandles& HandlesOf(std::map<std::string, SubjectHandles, std::less<>>& cache, const RuleCounters& counters,
                          const Subject& s, const History& history, SlotMaps& maps,
                          std::vector<std::optional<std::uint64_t>>& buffer);

// Hands a subject's values buffer back to its check when the subject is done.
class Lent {
 public:
  Lent(SubjectHandles& h, std::vector<std::optional<std::uint64_t>>& buffer) : h_(h), buffer_(buffer) {}
  ~Lent() { h_.values.swap(buffer_); }
  Lent(const Lent&) = delete;
  Lent& operator=(const Lent&) = delete;

 private:
  SubjectHandles& h_;
  std::vector<std::optional<std::uint64_t>>& buffer_;
};

// The collections from the newest sample of `steady` back that had `bit` set: [first, last].
std::pair<History::TimePoint, History::TimePoint> SteadyRun(const std::vector<History::Sample>& steady, unsigned bit);

// Records the subject's counters. An error counter that has not moved since the subject was first
// seen gets no series (most error counters of a port stay where they were at boot: 0, or a count
// from a link event long ago; and a series costs memory and a history lookup at every collection):
// one gauge per subject and device instance, "steady@<instance>", holds a bit per such counter
// (its place among the rules' counters), whose value stands in SubjectHandles::kept. When the
// counter moves, its series starts with the collections the gauge saw it steady, so the increase
// is judged as if it had been recorded. Returns whether every error counter's series continued its
// baseline (none new, reset or re-created; a steady run that starts at a count is a new one).
bool RecordSubject(const Subject& s, SubjectHandles& h, History::Batch& history, History::TimePoint now);

}  // namespace rdmahd::error_rates
