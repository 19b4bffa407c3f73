#include "core/history.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <new>

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
  limits_.max_series = std::clamp<std::size_t>(limits_.max_series, 1, kMaxSeries);
}

History::~History() {
  for (const auto& [dir, g] : groups_) {
    for (std::uint32_t i = g.next; (i & kGroupMark) == 0; i = At(i).next) FreeRing(At(i));
  }
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

std::uint32_t History::Interned::Acquire(std::uint64_t value) {
  if (last_ != kNone && slots_[last_].uses > 0 && slots_[last_].value == value) return AddRef(last_);
  auto [it, made] = ids_.try_emplace(value, kNone);
  if (made) {
    if (free_ != kNone) {
      it->second = free_;
      free_ = slots_[free_].next_free;
    } else {
      it->second = static_cast<std::uint32_t>(slots_.size());
      slots_.emplace_back();
    }
    slots_[it->second] = Slot{value, 0, kNone};
  }
  last_ = it->second;
  return AddRef(it->second);
}

void History::Interned::Release(std::uint32_t id) {
  Slot& slot = slots_[id];
  if (--slot.uses > 0) return;
  ids_.erase(slot.value);
  slot.next_free = free_;
  free_ = id;
}

void History::ReleaseTime(std::uint32_t& id) {
  if (id != kNone) times_.Release(id);
  id = kNone;
}

History::Sample History::at(const Series& s, std::size_t i) const {
  if (s.has_ring()) {
    const Ring& r = *s.ring();
    return r.samples()[(r.head + i) % r.count];
  }
  return Sample{Time(s.first), Time(s.last), s.value(), 0};
}

History::TimePoint History::last_seen(const Series& s) const {
  if (!s.has_ring()) return Time(s.last);
  const Ring& r = *s.ring();
  return r.samples()[(r.head + r.count - 1) % r.count].last;
}

std::uint32_t History::Find(Key key) const {
  std::string storage;
  key = Filed(key, storage);
  auto g = groups_.find(key.dir);
  if (g == groups_.end()) return kNone;
  auto leaf = leaves_.find(key.leaf);
  if (leaf == leaves_.end()) return kNone;
  for (std::uint32_t i = g->second.next; (i & kGroupMark) == 0; i = At(i).next) {
    if (At(i).leaf_id() == leaf->second.id) return i;
  }
  return kNone;
}

std::uint32_t History::Resolve(Ref& ref, Key key) const {
  if (ref.generation_ != generation_) {
    ref.series_ = RefOf(Find(key));
    ref.generation_ = generation_;
  }
  return IndexOf(ref.series_);
}

History::Refs::Refs(std::size_t size)
    : series_(std::make_unique<std::uint32_t[]>(size)), size_(static_cast<std::uint32_t>(size)) {}

std::uint32_t History::Resolve(Refs& refs, std::size_t i, Key key) const {
  if (refs.generation_ != generation_) {
    std::fill_n(refs.series_.get(), refs.size_, kUnknown);
    refs.generation_ = generation_;
  }
  std::uint32_t& series = refs.series_[i];
  if (series == kUnknown) series = Find(key);
  return series;
}

std::uint32_t History::Slot(Key key, bool counter, TimePoint at, bool& created) {
  created = false;
  if (key.dir.size() + key.leaf.size() > kMaxNameBytes) return kNone;
  std::string storage;
  key = Filed(key, storage);
  if (const std::uint32_t found = Find(key); found != kNone) {
    if (At(found).counter() == counter) {
      Touch(found);
      return found;
    }
    Erase(found);  // recorded as the other kind: start over
  }
  if (series_ >= limits_.max_series) {
    // The least recently recorded series goes, unless it was recorded in this collection too:
    // evicting it would only make the next collection evict another, and so on for ever.
    if (oldest_ == kNone || last_seen(At(oldest_)) >= at) {
      ++refused_;
      return kNone;
    }
    Erase(oldest_);
  }
  created = true;
  Changed();
  auto g = groups_.find(key.dir);
  if (g == groups_.end()) {
    g = groups_.emplace(std::string(key.dir), Group{}).first;
    std::uint32_t id = 0;
    if (!free_groups_.empty()) {
      id = free_groups_.back();
      free_groups_.pop_back();
      group_nodes_[id] = &*g;
    } else {
      id = static_cast<std::uint32_t>(group_nodes_.size());
      group_nodes_.push_back(&*g);
    }
    g->second = Group{id, kGroupMark | id};
  }
  auto leaf = leaves_.find(key.leaf);
  if (leaf == leaves_.end()) {
    leaf = leaves_.emplace(std::string(key.leaf), Leaf{}).first;
    if (!free_leaves_.empty()) {
      leaf->second.id = free_leaves_.back();
      free_leaves_.pop_back();
      leaf_names_[leaf->second.id] = &leaf->first;
    } else {
      leaf->second.id = static_cast<std::uint32_t>(leaf_names_.size());
      leaf_names_.push_back(&leaf->first);
    }
  }
  ++leaf->second.uses;
  std::uint32_t i = free_;
  if (i != kNone) {
    free_ = At(i).next;
  } else {
    if (slab_used_ % kSlabBlock == 0) blocks_.push_back(std::make_unique<Series[]>(kSlabBlock));
    i = slab_used_++;
  }
  Series& s = At(i);
  s = Series{};
  s.leaf = leaf->second.id | (counter ? kCounter : 0);
  s.next = g->second.next;
  g->second.next = i;
  ++series_;
  Touch(i);
  return i;
}

std::uint32_t History::Slot(std::uint32_t found, Key key, bool counter, TimePoint at, bool& created) {
  created = false;
  if (found != kNone && At(found).counter() == counter) {
    Touch(found);
    return found;
  }
  return Slot(key, counter, at, created);
}

std::uint32_t History::Slot(Handle& h, bool counter, TimePoint at, bool& created) {
  const std::uint32_t i = Slot(Resolve(h), Split(h.name_), counter, at, created);
  h.ref_.series_ = RefOf(i);
  h.ref_.generation_ = generation_;
  return i;
}

void History::Touch(std::uint32_t i) {
  if (newest_ == i) return;
  Series& s = At(i);
  if (s.older != kNone || oldest_ == i) {  // in the list: unlink
    (s.older != kNone ? At(s.older).newer : oldest_) = s.newer;
    At(s.newer).older = s.older;  // not the newest, so it has a newer one
  }
  s.older = newest_;
  s.newer = kNone;
  (newest_ != kNone ? At(newest_).newer : oldest_) = i;
  newest_ = i;
}

void History::FreeRing(Series& s) {
  if (!s.has_ring()) return;
  Ring* r = s.ring();
  ring_bytes_ -= HeapBlock(sizeof(Ring) + r->capacity * sizeof(Sample));
  ::operator delete(r);
  s.leaf &= ~kRing;
  s.set_value(0);
}

void History::Erase(std::uint32_t i) {
  Series& s = At(i);
  (s.older != kNone ? At(s.older).newer : oldest_) = s.newer;
  (s.newer != kNone ? At(s.newer).older : newest_) = s.older;
  // Out of its group's circle: the link that names it is its predecessor's, and the group lies on
  // the way there.
  GroupNode* group = nullptr;
  std::uint32_t* link = nullptr;
  for (std::uint32_t at = s.next;;) {
    if ((at & kGroupMark) != 0) {
      group = group_nodes_[at & ~kGroupMark];
      link = &group->second.next;
    } else {
      link = &At(at).next;
    }
    if (*link == i) break;
    at = *link;
  }
  *link = s.next;
  if ((group->second.next & kGroupMark) != 0) {  // its last series
    group_nodes_[group->second.id] = nullptr;
    free_groups_.push_back(group->second.id);
    groups_.erase(groups_.find(group->first));
  }
  const std::uint32_t leaf_id = s.leaf_id();
  auto leaf = leaves_.find(*leaf_names_[leaf_id]);
  if (--leaf->second.uses == 0) {
    leaf_names_[leaf_id] = nullptr;
    free_leaves_.push_back(leaf_id);
    leaves_.erase(leaf);
  }
  FreeRing(s);
  ReleaseTime(s.first);
  ReleaseTime(s.last);
  ReleaseTime(s.previous);
  s.next = free_;
  free_ = i;
  --series_;
  Changed();
}

void History::Push(Series& s, const Sample& sample) {
  if (!s.has_ring()) {
    if (s.first == kNone) {  // the first sample (baseline 0): kept in the series itself
      s.first = AcquireTime(sample.first);
      s.last = AcquireTime(sample.last);
      s.set_value(sample.value);
      return;
    }
    // The second: both go to a ring.
    const Sample one = at(s, 0);
    ReleaseTime(s.first);
    ReleaseTime(s.last);
    const std::size_t capacity = 2;
    const std::size_t bytes = sizeof(Ring) + capacity * sizeof(Sample);
    Ring* r = new (::operator new(bytes)) Ring{1, static_cast<std::uint16_t>(capacity), 0};
    std::uninitialized_default_construct_n(r->samples(), capacity);
    r->samples()[0] = one;
    ring_bytes_ += HeapBlock(bytes);
    s.set_ring(r);
    s.leaf |= kRing;
  }
  Ring* r = s.ring();
  if (r->count < limits_.max_samples) {
    if (r->count == r->capacity) {
      // Grow by doubling but never past max_samples: the bound holds for the capacity.
      const std::size_t capacity = std::min(limits_.max_samples, 2 * std::size_t{r->capacity});
      const std::size_t bytes = sizeof(Ring) + capacity * sizeof(Sample);
      Ring* grown = new (::operator new(bytes)) Ring{r->count, static_cast<std::uint16_t>(capacity), 0};
      std::uninitialized_default_construct_n(grown->samples(), capacity);
      std::copy_n(r->samples(), r->count, grown->samples());
      FreeRing(s);
      ring_bytes_ += HeapBlock(bytes);
      s.set_ring(grown);
      s.leaf |= kRing;
      r = grown;
    }
    // Not yet full: head is 0 and the ring is in order.
    r->samples()[r->count++] = sample;
    return;
  }
  r->samples()[r->head] = sample;
  r->head = static_cast<std::uint16_t>((r->head + 1) % r->count);
}

void History::Restart(Series& s, std::uint64_t value, TimePoint at) {
  const std::uint32_t baseline = size(s) > 0 ? newest(s).baseline + 1 : 0;
  Push(s, Sample{at, at, value, baseline});
  ReleaseTime(s.previous);
}

void History::Append(Series& s, std::uint64_t value, TimePoint at) {
  // Only ever after Restart: the series has a sample.
  if (!s.has_ring()) {
    const std::uint32_t previous = times_.AddRef(s.last);
    ReleaseTime(s.previous);
    s.previous = previous;
    if (s.value() == value) {
      const std::uint32_t last = AcquireTime(at);
      ReleaseTime(s.last);
      s.last = last;
      return;
    }
    Push(s, Sample{at, at, value, 0});
    return;
  }
  Ring& r = *s.ring();
  Sample& newest = r.samples()[(r.head + r.count - 1) % r.count];
  const std::uint32_t previous = AcquireTime(newest.last);
  ReleaseTime(s.previous);
  s.previous = previous;
  if (newest.value == value) {
    newest.last = at;
    return;
  }
  Push(s, Sample{at, at, value, newest.baseline});
}

History::Baseline History::RecordCounter(std::string_view name, std::uint64_t instance, std::uint64_t value,
                                         TimePoint at, unsigned bits) {
  MutexLock lock(mu_);
  bool created = false;
  const std::uint32_t i = Slot(Split(name), true, at, created);
  return RecordCounter(i, created, instance, value, at, bits);
}

History::Baseline History::RecordCounter(Handle& series, std::uint64_t instance, std::uint64_t value, TimePoint at,
                                         unsigned bits) {
  Batch batch(*this);
  return batch.RecordCounter(series, instance, value, at, bits);
}

History::Baseline History::Batch::RecordCounter(Handle& series, std::uint64_t instance, std::uint64_t value,
                                                TimePoint at, unsigned bits) {
  history_.mu_.AssertHeld();  // the Batch holds it for its lifetime
  bool created = false;
  const std::uint32_t i = history_.Slot(series, true, at, created);
  return history_.RecordCounter(i, created, instance, value, at, bits);
}

History::Baseline History::Batch::RecordCounter(Refs& series, std::size_t n, Key key, std::uint64_t instance,
                                                std::uint64_t value, TimePoint at, unsigned bits) {
  history_.mu_.AssertHeld();  // the Batch holds it for its lifetime
  bool created = false;
  // A series created leaves the refs of another generation: the next call looks them all up again.
  const std::uint32_t i = history_.Slot(history_.Resolve(series, n, key), key, true, at, created);
  series.series_[n] = i;
  return history_.RecordCounter(i, created, instance, value, at, bits);
}

History::Baseline History::RecordCounter(std::uint32_t i, bool created, std::uint64_t instance, std::uint64_t value,
                                         TimePoint at, unsigned bits) {
  if (i == kNone) return Baseline::kRefused;
  Series& s = At(i);
  if (created || size(s) == 0) {
    s.set_instance(instance);
    Restart(s, value, at);
    return Baseline::kFirst;
  }
  if (at <= last_seen(s)) return Baseline::kContinued;  // a time already recorded
  if (instance != s.instance()) {
    s.set_instance(instance);
    Restart(s, value, at);
    return Baseline::kRecreated;
  }
  const std::uint64_t previous = newest(s).value;
  if (value < previous) {
    const bool wrapped = bits > 0 && bits < 64 && previous >= (std::uint64_t{1} << (bits - 1));
    Restart(s, value, at);
    return wrapped ? Baseline::kWrap : Baseline::kReset;
  }
  Append(s, value, at);
  return Baseline::kContinued;
}

bool History::RecordGauge(std::string_view name, std::uint64_t value, TimePoint at) {
  MutexLock lock(mu_);
  bool created = false;
  const std::uint32_t i = Slot(Split(name), false, at, created);
  return RecordGauge(i, created, value, at);
}

bool History::RecordGauge(Handle& series, std::uint64_t value, TimePoint at) {
  Batch batch(*this);
  return batch.RecordGauge(series, value, at);
}

bool History::Batch::RecordGauge(Handle& series, std::uint64_t value, TimePoint at) {
  history_.mu_.AssertHeld();  // the Batch holds it for its lifetime
  bool created = false;
  const std::uint32_t i = history_.Slot(series, false, at, created);
  return history_.RecordGauge(i, created, value, at);
}

bool History::Batch::RecordGauge(Refs& series, std::size_t n, Key key, std::uint64_t value, TimePoint at) {
  history_.mu_.AssertHeld();  // the Batch holds it for its lifetime
  bool created = false;
  const std::uint32_t i = history_.Slot(history_.Resolve(series, n, key), key, false, at, created);
  series.series_[n] = i;
  return history_.RecordGauge(i, created, value, at);
}

bool History::RecordGauge(std::uint32_t i, bool created, std::uint64_t value, TimePoint at) {
  if (i == kNone) return false;
  Series& s = At(i);
  if (created || size(s) == 0) {
    Restart(s, value, at);
  } else if (at > last_seen(s)) {
    Append(s, value, at);
  }
  return true;
}

void History::Forget(std::string_view name) {
  MutexLock lock(mu_);
  if (const std::uint32_t i = Find(name); i != kNone) Erase(i);
}

void History::SetMaxSeries(std::size_t max_series) {
  MutexLock lock(mu_);
  limits_.max_series = std::clamp<std::size_t>(max_series, 1, kMaxSeries);
  while (series_ > limits_.max_series) Erase(oldest_);
}

void History::Evict(TimePoint now) {
  MutexLock lock(mu_);
  // Oldest first in the order they were recorded; the engine records at times that never go back.
  while (oldest_ != kNone && now - last_seen(At(oldest_)) > limits_.idle) Erase(oldest_);
}

std::optional<History::Growth> History::Increase(std::string_view name, Clock::duration window, TimePoint now) const {
  MutexLock lock(mu_);
  return Increase(Find(name), window, now);
}

std::optional<History::Growth> History::Increase(Handle& series, Clock::duration window, TimePoint now) const {
  MutexLock lock(mu_);
  return Increase(Resolve(series), window, now);
}

std::optional<History::Growth> History::Increase(Refs& series, std::size_t i, Key key, Clock::duration window,
                                                  TimePoint now) const {
  MutexLock lock(mu_);
  return Increase(Resolve(series, i, key), window, now);
}

std::optional<History::Growth> History::Batch::Increase(Handle& series, Clock::duration window, TimePoint now) const {
  history_.mu_.AssertHeld();  // the Batch holds it for its lifetime
  return history_.Increase(history_.Resolve(series), window, now);
}

std::optional<History::Growth> History::Batch::Increase(Refs& series, std::size_t i, Key key,
                                                        Clock::duration window, TimePoint now) const {
  history_.mu_.AssertHeld();  // the Batch holds it for its lifetime
  return history_.Increase(history_.Resolve(series, i, key), window, now);
}

std::optional<History::Growth> History::Increase(std::uint32_t series, Clock::duration window, TimePoint now) const {
  if (series == kNone) return std::nullopt;
  const Series& s = At(series);
  if (!s.counter() || size(s) == 0) return std::nullopt;
  const TimePoint start = now - window;
  const Sample newest = this->newest(s);
  if (newest.last < start) return std::nullopt;
  // The oldest sample of the newest baseline seen within the window.
  std::size_t i = 0;
  while (at(s, i).last < start || at(s, i).baseline != newest.baseline) ++i;
  return Between(at(s, i), newest, start);
}

std::optional<History::Growth> History::Between(const Sample& oldest, const Sample& newest, TimePoint start) {
  if (newest.last < start) return std::nullopt;
  // The oldest value was there at the window's start too when it was also seen before it.
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
  MutexLock lock(mu_);
  const std::uint32_t i = Find(name);
  if (i == kNone) return std::nullopt;
  const Series& s = At(i);
  if (!s.counter() || s.previous == kNone || size(s) == 0) return std::nullopt;
  const Sample newest = this->newest(s);
  std::uint64_t before = newest.value;  // the previous collection saw the same value
  if (newest.first == newest.last) {
    if (size(s) < 2) return std::nullopt;
    before = at(s, size(s) - 2).value;
  }
  return Growth{newest.value - before, Seconds(newest.last - Time(s.previous)).count()};
}

std::vector<History::Sample> History::Samples(std::string_view name) const {
  MutexLock lock(mu_);
  return Samples(Find(name));
}

std::vector<History::Sample> History::Samples(Handle& series) const {
  MutexLock lock(mu_);
  return Samples(Resolve(series));
}

std::vector<History::Sample> History::Batch::Samples(Handle& series) const {
  history_.mu_.AssertHeld();  // the Batch holds it for its lifetime
  return history_.Samples(history_.Resolve(series));
}

std::vector<History::Sample> History::Samples(Refs& series, std::size_t i, Key key) const {
  MutexLock lock(mu_);
  return Samples(Resolve(series, i, key));
}

std::vector<History::Sample> History::Batch::Samples(Refs& series, std::size_t i, Key key) const {
  history_.mu_.AssertHeld();  // the Batch holds it for its lifetime
  return history_.Samples(history_.Resolve(series, i, key));
}

std::optional<History::Sample> History::Newest(Handle& series) const {
  MutexLock lock(mu_);
  return Newest(Resolve(series));
}

std::optional<History::Sample> History::Batch::Newest(Handle& series) const {
  history_.mu_.AssertHeld();  // the Batch holds it for its lifetime
  return history_.Newest(history_.Resolve(series));
}

std::optional<History::Sample> History::Newest(Refs& series, std::size_t i, Key key) const {
  MutexLock lock(mu_);
  return Newest(Resolve(series, i, key));
}

std::optional<History::Sample> History::Batch::Newest(Refs& series, std::size_t i, Key key) const {
  history_.mu_.AssertHeld();  // the Batch holds it for its lifetime
  return history_.Newest(history_.Resolve(series, i, key));
}

std::optional<History::Sample> History::Newest(std::uint32_t i) const {
  if (i == kNone || size(At(i)) == 0) return std::nullopt;
  return newest(At(i));
}

std::vector<History::Sample> History::Samples(std::uint32_t i) const {
  std::vector<Sample> out;
  if (i != kNone) {
    const Series& s = At(i);
    out.reserve(size(s));
    for (std::size_t k = 0; k < size(s); ++k) out.push_back(at(s, k));
  }
  return out;
}

template <class F>
void History::ForEachUnder(std::string_view prefix, F f) const {
  // The groups whose dir starts with the prefix's own dir hold every name that starts with the
  // prefix; a dir sorts before the dirs under it, but names do not sort as (dir, leaf) pairs do
  // ("a/b/c/d" before "a/b/ca"), so the matches are sorted before they are handed out.
  const std::string_view dir = Split(prefix).dir;
  std::vector<std::pair<std::string, std::uint32_t>> found;
  for (auto g = groups_.lower_bound(dir); g != groups_.end() && g->first.starts_with(dir); ++g) {
    for (std::uint32_t i = g->second.next; (i & kGroupMark) == 0; i = At(i).next) {
      std::string name = g->first + *leaf_names_[At(i).leaf_id()];
      if (name.starts_with(prefix)) found.emplace_back(std::move(name), i);
    }
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [name, i] : found) f(std::move(name), i);
}

std::vector<std::string> History::Names(std::string_view prefix) const {
  MutexLock lock(mu_);
  std::vector<std::string> out;
  ForEachUnder(prefix, [&](std::string name, std::uint32_t) { out.push_back(std::move(name)); });
  return out;
}

std::vector<std::pair<std::string, std::vector<History::Sample>>> History::SamplesUnder(
    std::string_view prefix) const {
  MutexLock lock(mu_);
  std::vector<std::pair<std::string, std::vector<Sample>>> out;
  ForEachUnder(prefix, [&](std::string name, std::uint32_t i) {
    mu_.AssertHeld();  // ForEachUnder calls it with the lock held
    out.emplace_back(std::move(name), Samples(i));
  });
  return out;
}

std::size_t History::series() const {
  MutexLock lock(mu_);
  return series_;
}

std::uint64_t History::refused() const {
  MutexLock lock(mu_);
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

namespace {

// A vector's heap block (none while it holds none).
std::size_t VectorHeap(std::size_t capacity, std::size_t element_bytes) {
  return capacity > 0 ? HeapBlock(capacity * element_bytes) : 0;
}
// A std::unordered_map<uint64, uint32> node as libstdc++ makes it (the hash is not cached).
struct HashNode {
  void* next;
  std::pair<const std::uint64_t, std::uint32_t> value;
};

}  // namespace

std::size_t History::Interned::MemoryBytes() const {
  return VectorHeap(slots_.capacity(), sizeof(Slot)) + ids_.size() * HeapBlock(sizeof(HashNode)) +
         (ids_.bucket_count() > 1 ? HeapBlock(ids_.bucket_count() * sizeof(void*)) : 0);
}

std::size_t History::Interned::MaxMemoryBytes(std::size_t values) {
  // The slots at twice the most held at once (a vector grows by doubling, ids are reused), the
  // buckets at four times (the table grows by doubling and does not shrink).
  return HeapBlock(2 * values * sizeof(Slot)) + values * HeapBlock(sizeof(HashNode)) +
         HeapBlock((4 * values + 16) * sizeof(void*));
}

std::size_t History::MemoryBytes() const {
  MutexLock lock(mu_);
  std::size_t bytes = blocks_.size() * HeapBlock(kSlabBlock * sizeof(Series)) +
                      VectorHeap(blocks_.capacity(), sizeof(blocks_[0])) + ring_bytes_;
  for (const auto& [dir, g] : groups_) bytes += MapNode(sizeof(GroupNode)) + StringHeap(dir.capacity());
  bytes += VectorHeap(group_nodes_.capacity(), sizeof(GroupNode*)) +
           VectorHeap(free_groups_.capacity(), sizeof(std::uint32_t));
  for (const auto& [leaf, l] : leaves_) {
    bytes += MapNode(sizeof(std::pair<const std::string, Leaf>)) + StringHeap(leaf.capacity());
  }
  bytes += VectorHeap(leaf_names_.capacity(), sizeof(const std::string*)) +
           VectorHeap(free_leaves_.capacity(), sizeof(std::uint32_t));
  return bytes + times_.MemoryBytes();
}

std::size_t History::MaxMemoryBytes(const Limits& limits) {
  // At worst every series has a dir and a leaf of its own, each of the longest name, a full ring
  // and three times of its own; the slab is full, and the vectors of ids are at twice their size.
  const std::size_t samples = std::clamp<std::size_t>(limits.max_samples, 2, UINT16_MAX);
  const std::size_t series = std::clamp<std::size_t>(limits.max_series, 1, kMaxSeries);
  const std::size_t blocks = (series + kSlabBlock - 1) / kSlabBlock;
  const std::size_t per_series = HeapBlock(sizeof(Ring) + samples * sizeof(Sample)) +
                                 MapNode(sizeof(GroupNode)) + HeapBlock(kMaxNameBytes + 1) +
                                 MapNode(sizeof(std::pair<const std::string, Leaf>)) + HeapBlock(kMaxNameBytes + 1);
  return blocks * HeapBlock(kSlabBlock * sizeof(Series)) + HeapBlock(2 * blocks * sizeof(void*)) +
         series * per_series + 2 * (HeapBlock(2 * series * sizeof(void*)) + HeapBlock(2 * series * sizeof(std::uint32_t))) +
         Interned::MaxMemoryBytes(3 * series + 2);
}

}  // namespace rdmahd
