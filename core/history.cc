#include "core/history.h"

#include <algorithm>
#include <atomic>

namespace rdmahd {
namespace {

using Seconds = std::chrono::duration<double>;

// A heap block as glibc's malloc hands it out: a size word in front, rounded up to 16 bytes.
std::size_t HeapBlock(std::size_t bytes) { return (bytes + sizeof(std::size_t) + 15) / 16 * 16; }

}  // namespace

std::uint64_t History::NextGeneration() {
  static std::atomic<std::uint64_t> next{0};
  return ++next;
}

History::History() : generation_(NextGeneration()) {}

History::History(Limits limits) : limits_(limits), generation_(NextGeneration()) {
  limits_.max_samples = std::clamp<std::size_t>(limits_.max_samples, 2, UINT16_MAX);
  limits_.max_series = std::max<std::size_t>(limits_.max_series, 1);
}

History::Series* History::Find(std::string_view name) {
  auto it = series_.find(name);
  return it == series_.end() ? nullptr : &it->second;
}

const History::Series* History::Find(std::string_view name) const {
  auto it = series_.find(name);
  return it == series_.end() ? nullptr : &it->second;
}

History::Series* History::Resolve(Handle& h) const {
  if (h.generation_ != generation_) {
    auto it = series_.find(h.name_);
    h.series_ = it == series_.end() ? nullptr : const_cast<Series*>(&it->second);
    h.generation_ = generation_;
  }
  return static_cast<Series*>(h.series_);
}

History::Series* History::Slot(std::string_view name, bool counter, TimePoint at, bool& created) {
  created = false;
  if (name.size() > kMaxNameBytes) return nullptr;
  if (Series* s = Find(name)) {
    if (s->counter == counter) {
      Touch(*s);
      return s;
    }
    Erase(*s);  // recorded as the other kind: start over
  }
  if (series_.size() >= limits_.max_series) {
    // The least recently recorded series goes, unless it was recorded in this collection too:
    // evicting it would only make the next collection evict another, and so on for ever.
    if (oldest_ == nullptr || oldest_->last_seen >= at) {
      ++refused_;
      return nullptr;
    }
    Erase(*oldest_);
  }
  created = true;
  Changed();
  auto it = series_.emplace(std::string(name), Series{}).first;
  Series& s = it->second;
  s.counter = counter;
  s.name = &it->first;
  Touch(s);
  return &s;
}

History::Series* History::Slot(Handle& h, bool counter, TimePoint at, bool& created) {
  created = false;
  if (Series* s = Resolve(h); s != nullptr && s->counter == counter) {
    Touch(*s);
    return s;
  }
  Series* s = Slot(h.name_, counter, at, created);
  h.series_ = s;
  h.generation_ = generation_;
  return s;
}

void History::Touch(Series& s) {
  if (newest_ == &s) return;
  if (s.older != nullptr || oldest_ == &s) {  // in the list: unlink
    (s.older ? s.older->newer : oldest_) = s.newer;
    s.newer->older = s.older;  // not the newest, so it has a newer one
  }
  s.older = newest_;
  s.newer = nullptr;
  (newest_ ? newest_->newer : oldest_) = &s;
  newest_ = &s;
}

void History::Erase(Series& s) {
  (s.older ? s.older->newer : oldest_) = s.newer;
  (s.newer ? s.newer->older : newest_) = s.older;
  series_.erase(series_.find(*s.name));
  Changed();
}

void History::Push(Series& s, const Sample& sample) const {
  if (s.count < limits_.max_samples) {
    if (s.count == s.capacity) {
      // Grow by doubling from one (most series hold one sample: a counter that does not move) but
      // never past max_samples: the bound holds for the capacity.
      const std::size_t capacity = std::min(limits_.max_samples, std::max<std::size_t>(1, 2 * s.capacity));
      auto grown = std::make_unique_for_overwrite<Sample[]>(capacity);
      std::copy_n(s.ring.get(), s.count, grown.get());
      s.ring = std::move(grown);
      s.capacity = static_cast<std::uint16_t>(capacity);
    }
    // Not yet full: head is 0 and the ring is in order.
    s.ring[s.count++] = sample;
    return;
  }
  s.ring[s.head] = sample;
  s.head = static_cast<std::uint16_t>((s.head + 1) % s.count);
}

void History::Restart(Series& s, std::uint64_t value, TimePoint at) const {
  if (s.size() > 0) ++s.baseline;
  Push(s, Sample{at, at, value, s.baseline});
  s.has_previous = false;
  s.last_seen = at;
}

void History::Append(Series& s, std::uint64_t value, TimePoint at) const {
  s.previous_seen = s.last_seen;
  s.has_previous = true;
  s.last_seen = at;
  if (s.size() > 0 && s.at(s.size() - 1).value == value) {
    s.at(s.size() - 1).last = at;
    return;
  }
  Push(s, Sample{at, at, value, s.baseline});
}

History::Baseline History::RecordCounter(std::string_view name, std::uint64_t instance, std::uint64_t value,
                                         TimePoint at, unsigned bits) {
  std::lock_guard lock(mu_);
  bool created = false;
  Series* s = Slot(name, true, at, created);
  return RecordCounter(s, created, instance, value, at, bits);
}

History::Baseline History::RecordCounter(Handle& series, std::uint64_t instance, std::uint64_t value, TimePoint at,
                                         unsigned bits) {
  Batch batch(*this);
  return batch.RecordCounter(series, instance, value, at, bits);
}

History::Baseline History::Batch::RecordCounter(Handle& series, std::uint64_t instance, std::uint64_t value,
                                                TimePoint at, unsigned bits) {
  bool created = false;
  Series* s = history_.Slot(series, true, at, created);
  return history_.RecordCounter(s, created, instance, value, at, bits);
}

History::Baseline History::RecordCounter(Series* s, bool created, std::uint64_t instance, std::uint64_t value,
                                         TimePoint at, unsigned bits) {
  if (s == nullptr) return Baseline::kRefused;
  if (created || s->size() == 0) {
    s->instance = instance;
    Restart(*s, value, at);
    return Baseline::kFirst;
  }
  if (at <= s->last_seen) return Baseline::kContinued;  // a time already recorded
  if (instance != s->instance) {
    s->instance = instance;
    Restart(*s, value, at);
    return Baseline::kRecreated;
  }
  const std::uint64_t previous = s->newest().value;
  if (value < previous) {
    const bool wrapped = bits > 0 && bits < 64 && previous >= (std::uint64_t{1} << (bits - 1));
    Restart(*s, value, at);
    return wrapped ? Baseline::kWrap : Baseline::kReset;
  }
  Append(*s, value, at);
  return Baseline::kContinued;
}

bool History::RecordGauge(std::string_view name, std::uint64_t value, TimePoint at) {
  std::lock_guard lock(mu_);
  bool created = false;
  Series* s = Slot(name, false, at, created);
  return RecordGauge(s, created, value, at);
}

bool History::RecordGauge(Handle& series, std::uint64_t value, TimePoint at) {
  Batch batch(*this);
  return batch.RecordGauge(series, value, at);
}

bool History::Batch::RecordGauge(Handle& series, std::uint64_t value, TimePoint at) {
  bool created = false;
  Series* s = history_.Slot(series, false, at, created);
  return history_.RecordGauge(s, created, value, at);
}

bool History::RecordGauge(Series* s, bool created, std::uint64_t value, TimePoint at) {
  if (s == nullptr) return false;
  if (created || s->size() == 0) {
    Restart(*s, value, at);
  } else if (at > s->last_seen) {
    Append(*s, value, at);
  }
  return true;
}

void History::Forget(std::string_view name) {
  std::lock_guard lock(mu_);
  if (Series* s = Find(name)) Erase(*s);
}

void History::SetMaxSeries(std::size_t max_series) {
  std::lock_guard lock(mu_);
  limits_.max_series = std::max<std::size_t>(max_series, 1);
  while (series_.size() > limits_.max_series) Erase(*oldest_);
}

void History::Evict(TimePoint now) {
  std::lock_guard lock(mu_);
  // Oldest first in the order they were recorded; the engine records at times that never go back.
  while (oldest_ != nullptr && now - oldest_->last_seen > limits_.idle) Erase(*oldest_);
}

std::optional<History::Growth> History::Increase(std::string_view name, Clock::duration window, TimePoint now) const {
  std::lock_guard lock(mu_);
  return Increase(Find(name), window, now);
}

std::optional<History::Growth> History::Increase(Handle& series, Clock::duration window, TimePoint now) const {
  std::lock_guard lock(mu_);
  return Increase(Resolve(series), window, now);
}

std::optional<History::Growth> History::Batch::Increase(Handle& series, Clock::duration window, TimePoint now) const {
  return history_.Increase(history_.Resolve(series), window, now);
}

std::optional<History::Growth> History::Increase(const Series* s, Clock::duration window, TimePoint now) const {
  if (s == nullptr || !s->counter || s->size() == 0) return std::nullopt;
  const TimePoint start = now - window;
  const Sample& newest = s->newest();
  if (newest.last < start) return std::nullopt;
  // The oldest sample of the newest baseline seen within the window.
  std::size_t i = 0;
  while (s->at(i).last < start || s->at(i).baseline != newest.baseline) ++i;
  const Sample& oldest = s->at(i);
  // Its value was there at the window's start too when it was also seen before it.
  const TimePoint from = std::max(oldest.first, start);
  if (from >= newest.last) return std::nullopt;
  return Growth{newest.value - oldest.value, Seconds(newest.last - from).count()};
}

std::optional<double> History::Rate(std::string_view name, Clock::duration window, TimePoint now) const {
  const std::optional<Growth> g = Increase(name, window, now);
  if (!g || g->seconds <= 0) return std::nullopt;
  return static_cast<double>(g->increase) / g->seconds;
}

std::optional<History::Growth> History::LastStep(std::string_view name) const {
  std::lock_guard lock(mu_);
  const Series* s = Find(name);
  if (s == nullptr || !s->counter || !s->has_previous || s->size() == 0) return std::nullopt;
  const Sample& newest = s->newest();
  std::uint64_t before = newest.value;  // the previous collection saw the same value
  if (newest.first == s->last_seen) {
    if (s->size() < 2) return std::nullopt;
    before = s->at(s->size() - 2).value;
  }
  return Growth{newest.value - before, Seconds(s->last_seen - s->previous_seen).count()};
}

std::vector<History::Sample> History::Samples(std::string_view name) const {
  std::lock_guard lock(mu_);
  return Samples(Find(name));
}

std::vector<History::Sample> History::Samples(Handle& series) const {
  std::lock_guard lock(mu_);
  return Samples(Resolve(series));
}

std::vector<History::Sample> History::Batch::Samples(Handle& series) const {
  return History::Samples(history_.Resolve(series));
}

std::optional<History::Sample> History::Newest(Handle& series) const {
  std::lock_guard lock(mu_);
  return Newest(Resolve(series));
}

std::optional<History::Sample> History::Batch::Newest(Handle& series) const {
  return History::Newest(history_.Resolve(series));
}

std::optional<History::Sample> History::Newest(const Series* s) {
  if (s == nullptr || s->size() == 0) return std::nullopt;
  return s->newest();
}

std::vector<History::Sample> History::Samples(const Series* s) {
  std::vector<Sample> out;
  if (s != nullptr) {
    out.reserve(s->size());
    for (std::size_t i = 0; i < s->size(); ++i) out.push_back(s->at(i));
  }
  return out;
}

std::vector<std::string> History::Names(std::string_view prefix) const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (auto it = series_.lower_bound(prefix); it != series_.end() && it->first.starts_with(prefix); ++it) {
    out.push_back(it->first);
  }
  return out;
}

std::vector<std::pair<std::string, std::vector<History::Sample>>> History::SamplesUnder(
    std::string_view prefix) const {
  std::lock_guard lock(mu_);
  std::vector<std::pair<std::string, std::vector<Sample>>> out;
  for (auto it = series_.lower_bound(prefix); it != series_.end() && it->first.starts_with(prefix); ++it) {
    out.emplace_back(it->first, Samples(&it->second));
  }
  return out;
}

std::size_t History::series() const {
  std::lock_guard lock(mu_);
  return series_.size();
}

std::uint64_t History::refused() const {
  std::lock_guard lock(mu_);
  return refused_;
}

std::size_t History::MemoryBytes() const {
  std::lock_guard lock(mu_);
  std::size_t bytes = 0;
  for (const auto& [name, s] : series_) {
    bytes += HeapBlock(sizeof(std::pair<const std::string, Series>) + kNodeOverhead);
    if (name.capacity() > std::string().capacity()) bytes += HeapBlock(name.capacity() + 1);
    if (s.capacity > 0) bytes += HeapBlock(s.capacity * sizeof(Sample));
  }
  return bytes;
}

std::size_t History::MaxMemoryBytes(const Limits& limits) {
  const std::size_t samples = std::clamp<std::size_t>(limits.max_samples, 2, UINT16_MAX);
  const std::size_t per_series = HeapBlock(sizeof(std::pair<const std::string, Series>) + kNodeOverhead) +
                                 HeapBlock(kMaxNameBytes + 1) + HeapBlock(samples * sizeof(Sample));
  return std::max<std::size_t>(limits.max_series, 1) * per_series;
}

}  // namespace rdmahd
