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

History::Key History::Split(std::string_view name) {
  const std::size_t slash = name.rfind('/');
  if (slash == std::string_view::npos) return {{}, name};
  return {name.substr(0, slash + 1), name.substr(slash + 1)};
}

History::Key History::Filed(Key key, std::string& storage) {
  if (key.leaf.find('/') == std::string_view::npos) return key;
  storage.assign(key.dir).append(key.leaf);
  return Split(storage);
}

History::Series* History::Find(Key key) const {
  std::string storage;
  key = Filed(key, storage);
  auto g = groups_.find(key.dir);
  if (g == groups_.end()) return nullptr;
  for (const Entry& e : g->second.entries) {
    if (*e.leaf == key.leaf) return e.series.get();
  }
  return nullptr;
}

History::Series* History::Resolve(Ref& ref, Key key) const {
  if (ref.generation_ != generation_) {
    ref.series_ = Find(key);
    ref.generation_ = generation_;
  }
  return static_cast<Series*>(ref.series_);
}

History::Series* History::Slot(Key key, bool counter, TimePoint at, bool& created) {
  created = false;
  if (key.dir.size() + key.leaf.size() > kMaxNameBytes) return nullptr;
  std::string storage;
  key = Filed(key, storage);
  if (Series* s = Find(key)) {
    if (s->counter == counter) {
      Touch(*s);
      return s;
    }
    Erase(*s);  // recorded as the other kind: start over
  }
  if (series_ >= limits_.max_series) {
    // The least recently recorded series goes, unless it was recorded in this collection too:
    // evicting it would only make the next collection evict another, and so on for ever.
    if (oldest_ == nullptr || oldest_->last_seen() >= at) {
      ++refused_;
      return nullptr;
    }
    Erase(*oldest_);
  }
  created = true;
  Changed();
  auto g = groups_.find(key.dir);
  if (g == groups_.end()) {
    g = groups_.emplace(std::string(key.dir), Group{}).first;
    g->second.dir = &g->first;
  }
  auto leaf = leaves_.find(key.leaf);
  if (leaf == leaves_.end()) leaf = leaves_.emplace(std::string(key.leaf), 0).first;
  ++leaf->second;
  std::vector<Entry>& entries = g->second.entries;
  const auto place = std::lower_bound(entries.begin(), entries.end(), key.leaf,
                                      [](const Entry& e, std::string_view l) { return *e.leaf < l; });
  Series& s = *entries.insert(place, Entry{&leaf->first, std::make_unique<Series>()})->series;
  ++series_;
  s.counter = counter;
  s.group = &g->second;
  Touch(s);
  return &s;
}

History::Series* History::Slot(Ref& ref, Key key, bool counter, TimePoint at, bool& created) {
  created = false;
  if (Series* s = Resolve(ref, key); s != nullptr && s->counter == counter) {
    Touch(*s);
    return s;
  }
  Series* s = Slot(key, counter, at, created);
  ref.series_ = s;
  ref.generation_ = generation_;
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
  Group& g = *s.group;
  auto e = std::find_if(g.entries.begin(), g.entries.end(), [&](const Entry& x) { return x.series.get() == &s; });
  auto leaf = leaves_.find(*e->leaf);
  if (--leaf->second == 0) leaves_.erase(leaf);
  g.entries.erase(e);  // frees s
  if (g.entries.empty()) {
    groups_.erase(groups_.find(*g.dir));
  } else if (g.entries.capacity() > 2 * g.entries.size()) {
    g.entries.shrink_to_fit();
  }
  --series_;
  Changed();
}

void History::Push(Series& s, const Sample& sample) const {
  if (s.count < limits_.max_samples) {
    if (s.count == s.capacity) {
      // Grow by doubling from one (most series hold one sample: a counter that does not move) but
      // never past max_samples: the bound holds for the capacity.
      const std::size_t capacity = std::min(limits_.max_samples, std::max<std::size_t>(1, 2 * s.capacity));
      // The first sample is kept in the series itself.
      if (capacity > 1) {
        auto grown = std::make_unique_for_overwrite<Sample[]>(capacity);
        std::copy_n(s.samples(), s.count, grown.get());
        s.ring = std::move(grown);
      }
      s.capacity = static_cast<std::uint16_t>(capacity);
    }
    // Not yet full: head is 0 and the ring is in order.
    s.samples()[s.count++] = sample;
    return;
  }
  s.samples()[s.head] = sample;
  s.head = static_cast<std::uint16_t>((s.head + 1) % s.count);
}

void History::Restart(Series& s, std::uint64_t value, TimePoint at) const {
  const std::uint32_t baseline = s.size() > 0 ? s.newest().baseline + 1 : 0;
  Push(s, Sample{at, at, value, baseline});
  s.has_previous = false;
}

void History::Append(Series& s, std::uint64_t value, TimePoint at) const {
  // Only ever after Restart: the series has a sample.
  Sample& newest = s.at(s.size() - 1);
  s.previous_seen = newest.last;
  s.has_previous = true;
  if (newest.value == value) {
    newest.last = at;
    return;
  }
  Push(s, Sample{at, at, value, newest.baseline});
}

History::Baseline History::RecordCounter(std::string_view name, std::uint64_t instance, std::uint64_t value,
                                         TimePoint at, unsigned bits) {
  std::lock_guard lock(mu_);
  bool created = false;
  Series* s = Slot(Split(name), true, at, created);
  return RecordCounter(s, created, instance, value, at, bits);
}

History::Baseline History::RecordCounter(Handle& series, std::uint64_t instance, std::uint64_t value, TimePoint at,
                                         unsigned bits) {
  Batch batch(*this);
  return batch.RecordCounter(series, instance, value, at, bits);
}

History::Baseline History::Batch::RecordCounter(Handle& series, std::uint64_t instance, std::uint64_t value,
                                                TimePoint at, unsigned bits) {
  return RecordCounter(series.ref_, Split(series.name_), instance, value, at, bits);
}

History::Baseline History::Batch::RecordCounter(Ref& series, Key key, std::uint64_t instance, std::uint64_t value,
                                                TimePoint at, unsigned bits) {
  bool created = false;
  Series* s = history_.Slot(series, key, true, at, created);
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
  if (at <= s->last_seen()) return Baseline::kContinued;  // a time already recorded
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
  Series* s = Slot(Split(name), false, at, created);
  return RecordGauge(s, created, value, at);
}

bool History::RecordGauge(Handle& series, std::uint64_t value, TimePoint at) {
  Batch batch(*this);
  return batch.RecordGauge(series, value, at);
}

bool History::Batch::RecordGauge(Handle& series, std::uint64_t value, TimePoint at) {
  bool created = false;
  Series* s = history_.Slot(series.ref_, Split(series.name_), false, at, created);
  return history_.RecordGauge(s, created, value, at);
}

bool History::RecordGauge(Series* s, bool created, std::uint64_t value, TimePoint at) {
  if (s == nullptr) return false;
  if (created || s->size() == 0) {
    Restart(*s, value, at);
  } else if (at > s->last_seen()) {
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
  while (series_ > limits_.max_series) Erase(*oldest_);
}

void History::Evict(TimePoint now) {
  std::lock_guard lock(mu_);
  // Oldest first in the order they were recorded; the engine records at times that never go back.
  while (oldest_ != nullptr && now - oldest_->last_seen() > limits_.idle) Erase(*oldest_);
}

std::optional<History::Growth> History::Increase(std::string_view name, Clock::duration window, TimePoint now) const {
  std::lock_guard lock(mu_);
  return Increase(Find(name), window, now);
}

std::optional<History::Growth> History::Increase(Handle& series, Clock::duration window, TimePoint now) const {
  std::lock_guard lock(mu_);
  return Increase(Resolve(series), window, now);
}

std::optional<History::Growth> History::Increase(Ref& series, Key key, Clock::duration window, TimePoint now) const {
  std::lock_guard lock(mu_);
  return Increase(Resolve(series, key), window, now);
}

std::optional<History::Growth> History::Batch::Increase(Handle& series, Clock::duration window, TimePoint now) const {
  return history_.Increase(history_.Resolve(series), window, now);
}

std::optional<History::Growth> History::Batch::Increase(Ref& series, Key key, Clock::duration window,
                                                        TimePoint now) const {
  return history_.Increase(history_.Resolve(series, key), window, now);
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
  if (newest.first == s->last_seen()) {
    if (s->size() < 2) return std::nullopt;
    before = s->at(s->size() - 2).value;
  }
  return Growth{newest.value - before, Seconds(s->last_seen() - s->previous_seen).count()};
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

template <class F>
void History::ForEachUnder(std::string_view prefix, F f) const {
  // The groups whose dir starts with the prefix's own dir hold every name that starts with the
  // prefix; a dir sorts before the dirs under it, but names do not sort as (dir, leaf) pairs do
  // ("a/b/c/d" before "a/b/ca"), so the matches are sorted before they are handed out.
  const std::string_view dir = Split(prefix).dir;
  std::vector<std::pair<std::string, const Series*>> found;
  for (auto g = groups_.lower_bound(dir); g != groups_.end() && g->first.starts_with(dir); ++g) {
    for (const Entry& e : g->second.entries) {
      std::string name = NameOf(g->second, e);
      if (name.starts_with(prefix)) found.emplace_back(std::move(name), e.series.get());
    }
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [name, s] : found) f(std::move(name), *s);
}

std::vector<std::string> History::Names(std::string_view prefix) const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  ForEachUnder(prefix, [&](std::string name, const Series&) { out.push_back(std::move(name)); });
  return out;
}

std::vector<std::pair<std::string, std::vector<History::Sample>>> History::SamplesUnder(
    std::string_view prefix) const {
  std::lock_guard lock(mu_);
  std::vector<std::pair<std::string, std::vector<Sample>>> out;
  ForEachUnder(prefix, [&](std::string name, const Series& s) { out.emplace_back(std::move(name), Samples(&s)); });
  return out;
}

std::size_t History::series() const {
  std::lock_guard lock(mu_);
  return series_;
}

std::uint64_t History::refused() const {
  std::lock_guard lock(mu_);
  return refused_;
}

namespace {

// Heap bytes of a std::map node holding a `value_bytes` value: the node's links and colour in front.
std::size_t MapNode(std::size_t value_bytes) { return HeapBlock(4 * sizeof(void*) + value_bytes); }
// A std::string's own heap buffer, beyond the small-string buffer inside it.
std::size_t StringHeap(std::size_t capacity) {
  return capacity > std::string().capacity() ? HeapBlock(capacity + 1) : 0;
}

}  // namespace

std::size_t History::MemoryBytes() const {
  std::lock_guard lock(mu_);
  std::size_t bytes = 0;
  for (const auto& [dir, g] : groups_) {
    bytes += MapNode(sizeof(std::pair<const std::string, Group>)) + StringHeap(dir.capacity());
    bytes += HeapBlock(g.entries.capacity() * sizeof(Entry));
    for (const Entry& e : g.entries) {
      bytes += HeapBlock(sizeof(Series));
      if (e.series->capacity > 1) bytes += HeapBlock(e.series->capacity * sizeof(Sample));
    }
  }
  for (const auto& [leaf, uses] : leaves_) {
    bytes += MapNode(sizeof(std::pair<const std::string, std::size_t>)) + StringHeap(leaf.capacity());
  }
  return bytes;
}

std::size_t History::MaxMemoryBytes(const Limits& limits) {
  // At worst every series has a dir and a leaf of its own, each of the longest name, a group's
  // entries at twice their size (shrunk past that), and a full ring.
  const std::size_t samples = std::clamp<std::size_t>(limits.max_samples, 2, UINT16_MAX);
  const std::size_t per_series = MapNode(sizeof(std::pair<const std::string, Group>)) + HeapBlock(kMaxNameBytes + 1) +
                                 HeapBlock(2 * sizeof(Entry)) + HeapBlock(sizeof(Series)) +
                                 HeapBlock(samples * sizeof(Sample)) +
                                 MapNode(sizeof(std::pair<const std::string, std::size_t>)) + HeapBlock(kMaxNameBytes + 1);
  return std::max<std::size_t>(limits.max_series, 1) * per_series;
}

}  // namespace rdmahd
