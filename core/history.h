// History: the values of named series over past collections, for checks that judge change (a
// counter's increase or rate, how long a port has been down) rather than one collection's value.
// The collection engine owns one; every enabled check records the series it needs from the
// collection's facts (Check::Record, once per collection, nothing read from the node again) and asks
// the history when it evaluates (CheckContext::history).
//
// A series is named by its caller ("link_flaps/mlx5_0/1/link_downed"). Samples are (steady time,
// unsigned value); a sample equal to the one before extends it instead of adding one, so a series
// costs memory per change, not per collection (a port's state or link_downed changes rarely).
//
// Counters: a value below the previous one is a reset (driver reloaded, counter cleared) or, for a
// counter the kernel keeps narrower than 64 bits, a wrap when the previous value was in the upper
// half of its range; an `instance` other than the previous one (a device's generation, a netdev's
// ifindex) is the thing re-created. Each starts a new baseline (Sample::baseline counts them): an
// increase is never negative and never spans two baselines; older baselines' samples stay for
// callers that replay a timeline, until they age out. Gauges (a port's state as 0/1)
// take any value and keep their samples.
//
// Bounds: at most Limits::max_samples per series (the oldest go first), Limits::max_series series,
// names of at most kMaxNameBytes; Evict() drops series not recorded for Limits::idle. A new series
// beyond max_series takes the place of the one recorded least recently, unless that one was recorded
// at the same time or later (in the same collection): then the new one is refused (kRefused) and
// counted in refused(). So a node with more series than the bound keeps a stable set of them
// judged, instead of every collection evicting the series the next one needs. Finding the one to
// evict costs O(1): the series are also kept in a list in the order they were last recorded.
// MemoryBytes() is the heap the history holds; MaxMemoryBytes() its bound (history_test measures
// both against the allocator).
//
// Series are filed by dir, the name up to its last '/' ("port_errors/mlx5_0/1/"): a dir's name is
// kept once for its series, and a leaf ("symbol_error") once for the history.
//
// Layout, for a node of thousands of ports whose series mostly hold one sample (a counter that does
// not move): a series is 44 bytes in a slab of fixed-size blocks (no malloc header of its own),
// known by its 32-bit place there; the record order, a dir's series (a circle through them and the
// dir) and the free places link places, not pointers. A series' only sample is kept in the series,
// its two times as 32-bit ids of times the history keeps once with their uses (the series recorded
// in a collection share its time), as is the collection before the last; a second sample moves the
// samples to a ring of whole Samples on the heap.
//
// Handles: a caller that records and asks the same series every collection keeps a Handle per
// series, so that neither formats the name nor looks it up again. A handle remembers where its
// series lives and the history's generation it found it in; the generation changes whenever a
// series is created or dropped (new, forgotten, evicted, recorded as the other kind), and a handle
// of another generation (or of another History) finds its series by name again. A Refs is the
// handles of many series without their names and with one generation: its caller passes a series'
// name as a Key with each call. The history keeps nothing per handle, so handles do not change its
// memory bound.
//
// Thread-safe (one mutex); the engine records and checks read on the collecting thread. A Handle
// is its owner's: one thread at a time. A Batch takes the mutex once for many handle calls (a check
// recording and judging the twenty counters of a port).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/mutex.h"

namespace rdmahd {

class History {
 public:
  using Clock = std::chrono::steady_clock;
  using TimePoint = Clock::time_point;

  static constexpr std::size_t kMaxNameBytes = 256;

  struct Limits {
    std::size_t max_samples = 64;    // per series (at least 2, at most 65,535)
    // A port's link history is three series, its error-rate checks one per error counter that is
    // not zero and one per packet counter (30-50 on an mlx5 port), a netdev's pause two: room for
    // the ports of a host with over 2,000 SR-IOV functions.
    std::size_t max_series = 262144;  // at least 1, at most 2^30
    Clock::duration idle = std::chrono::hours(1);
  };

  // What a recorded counter value did to its series.
  enum class Baseline {
    kContinued,  // same baseline (the value grew or stayed)
    kFirst,      // the series is new: this is its first sample
    kReset,      // the value went down: a new baseline starts
    kWrap,       // went down from the upper half of a counter narrower than 64 bits: a new baseline
    kRecreated,  // another instance of the thing counted: a new baseline
    kRefused,    // not recorded: the name is longer than kMaxNameBytes, or the history is full
  };

  // `first` and `last` are the first and last collection that saw `value` (equal for one);
  // `baseline` numbers the series' baselines (a sample of another baseline is no growth).
  struct Sample {
    TimePoint first, last;
    std::uint64_t value = 0;
    std::uint32_t baseline = 0;
  };

  // An increase between two points of a counter's baseline, `seconds` apart.
  struct Growth {
    std::uint64_t increase = 0;
    double seconds = 0;
  };

  // A series' name split where the history files it: `dir` up to and including the name's last '/'
  // (empty for a name without one) and `leaf` the rest. Both are the caller's, borrowed for the call.
  struct Key {
    std::string_view dir;
    std::string_view leaf;
  };
  static Key Split(std::string_view name);

  // Where the history last found a series (see Handles above): a Handle's.
  class Ref {
   private:
    friend class History;
    void* series_ = nullptr;        // the series' place (nullptr: none), while generation_ is current
    std::uint64_t generation_ = 0;  // 0: not looked up yet
  };

  // Where the history last found each of a caller's `size` series, for a caller that keeps their
  // names (as Keys) itself and passes series i's with each call: four bytes a series and one
  // generation for them all (an error-rate check keeps one per counter of thousands of ports). When
  // the history's generation moved, every one of them finds its series by name again.
  class Refs {
   public:
    Refs() = default;
    explicit Refs(std::size_t size);
    std::size_t size() const { return size_; }

   private:
    friend class History;
    std::unique_ptr<std::uint32_t[]> series_;  // places in the slab; kNone: none; kUnknown: not looked up
    std::uint32_t size_ = 0;
    std::uint64_t generation_ = 0;  // 0: not looked up yet
  };

  // A series' name and where the history last found it.
  class Handle {
   public:
    Handle() = default;
    explicit Handle(std::string name) : name_(std::move(name)) {}
    const std::string& name() const { return name_; }

   private:
    friend class History;
    std::string name_;
    Ref ref_;
  };

  // The handle calls below under one hold of the history's lock, for a caller that makes many in a
  // row. Other calls of the history wait while a Batch lives: make none (not even through another
  // Batch) on the same thread meanwhile.
  class Batch {
   public:
    explicit Batch(History& history) : history_(history), lock_(history.mu_) {}
    Baseline RecordCounter(Handle& series, std::uint64_t instance, std::uint64_t value, TimePoint at,
                           unsigned bits = 64);
    bool RecordGauge(Handle& series, std::uint64_t value, TimePoint at);
    std::optional<Growth> Increase(Handle& series, Clock::duration window, TimePoint now) const;
    std::vector<Sample> Samples(Handle& series) const;
    std::optional<Sample> Newest(Handle& series) const;
    // The same for series i of `series`, named by `key` (its caller keeps the name).
    Baseline RecordCounter(Refs& series, std::size_t i, Key key, std::uint64_t instance, std::uint64_t value,
                           TimePoint at, unsigned bits = 64);
    std::optional<Growth> Increase(Refs& series, std::size_t i, Key key, Clock::duration window,
                                   TimePoint now) const;
    bool RecordGauge(Refs& series, std::size_t i, Key key, std::uint64_t value, TimePoint at);
    std::vector<Sample> Samples(Refs& series, std::size_t i, Key key) const;
    std::optional<Sample> Newest(Refs& series, std::size_t i, Key key) const;
    const Limits& limits() const { return history_.limits(); }

   private:
    History& history_;
    MutexLock lock_;
  };

  History();
  explicit History(Limits limits);
  ~History();
  History(const History&) = delete;
  History& operator=(const History&) = delete;

  // Records counter `name`'s `value` at `at` (times never go back within a series: an earlier `at`
  // is ignored). `bits`: the width the kernel keeps the counter in (64, 32, ...).
  Baseline RecordCounter(std::string_view name, std::uint64_t instance, std::uint64_t value, TimePoint at,
                         unsigned bits = 64);
  Baseline RecordCounter(Handle& series, std::uint64_t instance, std::uint64_t value, TimePoint at,
                         unsigned bits = 64);
  // Records gauge `name`'s `value` at `at`; false when refused (name too long).
  bool RecordGauge(std::string_view name, std::uint64_t value, TimePoint at);
  bool RecordGauge(Handle& series, std::uint64_t value, TimePoint at);
  // Drops series `name` (a caller's subject is gone for good).
  void Forget(std::string_view name);
  // A new max_series (at least 1); when lower than the series held, the least recently recorded go.
  void SetMaxSeries(std::size_t max_series);
  // Drops every series last recorded before `now - limits.idle`.
  void Evict(TimePoint now);

  // Counter `name`'s increase over the `window` ending at `now`: from the oldest point of its baseline
  // known in the window to its newest. A sample whose value was seen both before and within the
  // window puts that value at the window's start (a counter that did not change between two
  // observations was constant in between). Unknown (nullopt) until the window holds two such
  // points, or when the newest sample is older than the window.
  std::optional<Growth> Increase(std::string_view name, Clock::duration window, TimePoint now) const;
  std::optional<Growth> Increase(Handle& series, Clock::duration window, TimePoint now) const;
  std::optional<Growth> Increase(Refs& series, std::size_t i, Key key, Clock::duration window,
                                 TimePoint now) const;
  // The increase from `oldest` to `newest`, two samples of one baseline, over the part of it within a
  // window that starts at `start`: Increase()'s arithmetic, for a caller that keeps a series' samples
  // its own way. Unknown when `newest` was last seen before the window, or the two are one point in it.
  static std::optional<Growth> Between(const Sample& oldest, const Sample& newest, TimePoint start);
  // Increase() per second; unknown as Increase() is.
  std::optional<double> Rate(std::string_view name, Clock::duration window, TimePoint now) const;
  // Counter `name`'s increase between its last two collections; unknown after one, or across a
  // new baseline.
  std::optional<Growth> LastStep(std::string_view name) const;
  // The series' samples, oldest first (empty when unknown).
  std::vector<Sample> Samples(std::string_view name) const;
  std::vector<Sample> Samples(Handle& series) const;
  std::vector<Sample> Samples(Refs& series, std::size_t i, Key key) const;
  // The series' newest sample; nullopt when unknown.
  std::optional<Sample> Newest(Handle& series) const;
  std::optional<Sample> Newest(Refs& series, std::size_t i, Key key) const;
  // Names of the series that start with `prefix`, in order.
  std::vector<std::string> Names(std::string_view prefix) const;
  // Each series that starts with `prefix`, in order, with its samples (one walk, one hold of the lock:
  // Names() and then Samples() of each name looks every name up again).
  std::vector<std::pair<std::string, std::vector<Sample>>> SamplesUnder(std::string_view prefix) const;

  std::size_t series() const;
  // New series refused because the history was full, since it was made.
  std::uint64_t refused() const;
  std::size_t MemoryBytes() const;
  // The most MemoryBytes() can be under `limits`.
  static std::size_t MaxMemoryBytes(const Limits& limits);
  const Limits& limits() const { return limits_; }

 private:
  static constexpr std::uint32_t kNone = UINT32_MAX;
  static constexpr std::uint32_t kUnknown = UINT32_MAX - 1;  // a Refs' series not looked up yet
  // Series are numbered in 32 bits, with room for the group mark.
  static constexpr std::size_t kMaxSeries = std::size_t{1} << 30;
  // 64-bit values that many uses share (the time of a collection: every series recorded in it is
  // recorded at that time), each kept once with its number of uses; a use is a 32-bit id.
  class Interned {
   public:
    // The id of `value`, one use more (made when new).
    std::uint32_t Acquire(std::uint64_t value);
    // One use more of id `id`.
    std::uint32_t AddRef(std::uint32_t id) {
      ++slots_[id].uses;
      return id;
    }
    // One use less: the value goes with its last.
    void Release(std::uint32_t id);
    std::uint64_t operator[](std::uint32_t id) const { return slots_[id].value; }
    std::size_t MemoryBytes() const;
    // The most MemoryBytes() can be while at most `values` are held at a time.
    static std::size_t MaxMemoryBytes(std::size_t values);

   private:
    struct Slot {
      std::uint64_t value = 0;
      std::uint32_t uses = 0;
      std::uint32_t next_free = kNone;
    };
    std::vector<Slot> slots_;                         // by id
    std::uint32_t free_ = kNone;                      // the slots of no value, a list through next_free
    std::unordered_map<std::uint64_t, std::uint32_t> ids_;  // value -> id
    std::uint32_t last_ = kNone;                      // the id acquired last (a collection asks one time over)
  };
  // A series' samples once it has more than one: a small header, then `capacity` samples in one
  // heap block, `count` used, oldest at `head` once full.
  struct alignas(8) Ring {
    std::uint16_t count = 0, capacity = 0, head = 0;
    Sample* samples() { return reinterpret_cast<Sample*>(this + 1); }
    const Sample* samples() const { return reinterpret_cast<const Sample*>(this + 1); }
  };
  static_assert(sizeof(Ring) == 8 && alignof(Sample) <= alignof(Ring));
  // A series, 44 bytes in a slab (kSlabBlock of them to a heap block, so none has a malloc header
  // of its own): a node of thousands of ports holds a series per counter, most with one sample (a
  // counter that does not move). Other series, the record order and the groups refer to it by its
  // 32-bit place in the slab; it stays there while it lives (handles keep that place).
  struct Series {
    // While the series has one sample (kRing clear): that sample, its `first` and `last` as ids in
    // times_ and its baseline 0 (a series' second sample makes the ring, and only a Restart after
    // its first sample starts another baseline). Once it has more: the Ring, in value_'s bytes.
    // 64-bit words as two halves, so that a series is 4-byte aligned: 44 bytes, not 48.
    std::uint32_t value_[2] = {};
    std::uint32_t instance_[2] = {};
    std::uint32_t first = kNone;     // kNone: no sample yet (only while it is being created)
    std::uint32_t last = kNone;
    std::uint32_t previous = kNone;  // the collection before the last (LastStep), in times_; kNone: none
    // The order series were last recorded in (Touch), oldest first; kNone at its ends.
    std::uint32_t older = kNone, newer = kNone;
    // The next series of its group, in a circle closed by the group (kGroupMark | the group's id);
    // in a free slot, the next free one.
    std::uint32_t next = kNone;
    // The leaf's id in leaf_names_, with kCounter and kRing.
    std::uint32_t leaf = 0;

    std::uint64_t value() const { return Word(value_); }
    void set_value(std::uint64_t v) { SetWord(value_, v); }
    std::uint64_t instance() const { return Word(instance_); }
    void set_instance(std::uint64_t v) { SetWord(instance_, v); }
    Ring* ring() const { return reinterpret_cast<Ring*>(static_cast<std::uintptr_t>(Word(value_))); }
    void set_ring(Ring* r) { SetWord(value_, reinterpret_cast<std::uintptr_t>(r)); }
    bool has_ring() const { return (leaf & kRing) != 0; }
    bool counter() const { return (leaf & kCounter) != 0; }
    std::uint32_t leaf_id() const { return leaf & kLeafMask; }

    static std::uint64_t Word(const std::uint32_t (&w)[2]) { return w[0] | std::uint64_t{w[1]} << 32; }
    static void SetWord(std::uint32_t (&w)[2], std::uint64_t v) {
      w[0] = static_cast<std::uint32_t>(v);
      w[1] = static_cast<std::uint32_t>(v >> 32);
    }
  };
  static_assert(sizeof(void*) <= 8 && sizeof(Series) == 44, "a series outgrew its slab slot");
  static constexpr std::uint32_t kCounter = 1u << 30, kRing = 1u << 31, kLeafMask = kCounter - 1;
  static constexpr std::uint32_t kGroupMark = 1u << 31;
  // Series per slab block: a block's heap block stays below malloc's mmap threshold, where
  // mallinfo2() and the heap's own accounting see it.
  static constexpr std::size_t kSlabBlock = 256;
  // The series of one dir ("port_errors/mlx5_0/1/"): a dir's name is kept once, not once per series
  // (a port's thirty counters share it).
  struct Group {
    std::uint32_t id = 0;    // in group_nodes_
    std::uint32_t next = 0;  // its first series (kGroupMark | id: none)
  };
  using GroupNode = std::pair<const std::string, Group>;
  struct Leaf {
    std::uint32_t id = 0;    // in leaf_names_
    std::uint32_t uses = 0;  // series of that leaf
  };

  Series& At(std::uint32_t i) const REQUIRES(mu_) { return blocks_[i / kSlabBlock][i % kSlabBlock]; }
  // A series' place as a Ref keeps it (nullptr: none), and back.
  static void* RefOf(std::uint32_t i) {
    return i == kNone ? nullptr : reinterpret_cast<void*>(static_cast<std::uintptr_t>(i) + 1);
  }
  static std::uint32_t IndexOf(void* p) {
    return p == nullptr ? kNone : static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(p) - 1);
  }
  TimePoint Time(std::uint32_t id) const REQUIRES(mu_) {
    return TimePoint(Clock::duration(static_cast<Clock::rep>(times_[id])));
  }
  std::uint32_t AcquireTime(TimePoint t) REQUIRES(mu_) {
    return times_.Acquire(static_cast<std::uint64_t>(t.time_since_epoch().count()));
  }
  void ReleaseTime(std::uint32_t& id) REQUIRES(mu_);
  std::size_t size(const Series& s) const REQUIRES(mu_) {
    return s.has_ring() ? s.ring()->count : (s.first == kNone ? 0 : 1);
  }
  Sample at(const Series& s, std::size_t i) const REQUIRES(mu_);
  Sample newest(const Series& s) const REQUIRES(mu_) { return at(s, size(s) - 1); }
  TimePoint last_seen(const Series& s) const REQUIRES(mu_);

  // `key` split where the history files it: itself, unless its leaf holds a '/' (a caller split
  // the name elsewhere); then the whole name, kept in `storage`, split again.
  static Key Filed(Key key, std::string& storage);
  std::uint32_t Find(Key key) const REQUIRES(mu_);
  std::uint32_t Find(std::string_view name) const REQUIRES(mu_) { return Find(Split(name)); }
  // The series of `ref`, found by `key` when the ref is of another generation.
  std::uint32_t Resolve(Ref& ref, Key key) const REQUIRES(mu_);
  std::uint32_t Resolve(Refs& refs, std::size_t i, Key key) const REQUIRES(mu_);
  std::uint32_t Resolve(Handle& h) const REQUIRES(mu_) { return Resolve(h.ref_, Split(h.name_)); }
  // A series was created or dropped: every handle looks its series up again.
  void Changed() REQUIRES(mu_) { generation_ = NextGeneration(); }
  // Unique across all Histories, so a handle used with another History looks its series up.
  static std::uint64_t NextGeneration();
  // The series to record into at `at`, created (in the place of the least recently recorded one
  // when full); kNone when refused (see Bounds above).
  std::uint32_t Slot(Key key, bool counter, TimePoint at, bool& created) REQUIRES(mu_);
  // The same for the series found at `found` (kNone: none) by a ref.
  std::uint32_t Slot(std::uint32_t found, Key key, bool counter, TimePoint at, bool& created) REQUIRES(mu_);
  std::uint32_t Slot(Handle& h, bool counter, TimePoint at, bool& created) REQUIRES(mu_);
  // Series `i` was recorded: it becomes the newest in the record order.
  void Touch(std::uint32_t i) REQUIRES(mu_);
  // Takes series `i` out of the record order, its group and the history.
  void Erase(std::uint32_t i) REQUIRES(mu_);
  // Calls f(name, series) for each series whose name starts with `prefix`, in the names' order.
  template <class F>
  void ForEachUnder(std::string_view prefix, F f) const REQUIRES(mu_);
  Baseline RecordCounter(std::uint32_t i, bool created, std::uint64_t instance, std::uint64_t value, TimePoint at,
                         unsigned bits) REQUIRES(mu_);
  bool RecordGauge(std::uint32_t i, bool created, std::uint64_t value, TimePoint at) REQUIRES(mu_);
  std::optional<Growth> Increase(std::uint32_t i, Clock::duration window, TimePoint now) const REQUIRES(mu_);
  std::vector<Sample> Samples(std::uint32_t i) const REQUIRES(mu_);
  std::optional<Sample> Newest(std::uint32_t i) const REQUIRES(mu_);
  // Adds a sample (the oldest goes when full).
  void Push(Series& s, const Sample& sample) REQUIRES(mu_);
  void Append(Series& s, std::uint64_t value, TimePoint at) REQUIRES(mu_);
  void Restart(Series& s, std::uint64_t value, TimePoint at) REQUIRES(mu_);
  void FreeRing(Series& s) REQUIRES(mu_);

  Limits limits_;
  mutable Mutex mu_;
  // Series stay put in the slab (handles point at them); free slots form a list
  // through Series::next. Dirs and leaves are interned with ids the series refer to them by.
  std::vector<std::unique_ptr<Series[]>> blocks_ GUARDED_BY(mu_);
  std::uint32_t slab_used_ GUARDED_BY(mu_) = 0;  // slots ever handed out
  std::uint32_t free_ GUARDED_BY(mu_) = kNone;
  std::map<std::string, Group, std::less<>> groups_ GUARDED_BY(mu_);
  std::vector<GroupNode*> group_nodes_ GUARDED_BY(mu_);  // by id (nullptr: free)
  std::vector<std::uint32_t> free_groups_ GUARDED_BY(mu_);
  std::map<std::string, Leaf, std::less<>> leaves_ GUARDED_BY(mu_);
  std::vector<const std::string*> leaf_names_ GUARDED_BY(mu_);  // by id (nullptr: free)
  std::vector<std::uint32_t> free_leaves_ GUARDED_BY(mu_);
  Interned times_ GUARDED_BY(mu_);  // every time a series keeps outside a ring
  std::size_t ring_bytes_ GUARDED_BY(mu_) = 0;  // heap of the rings
  std::size_t series_ GUARDED_BY(mu_) = 0;
  std::uint32_t oldest_ GUARDED_BY(mu_) = kNone;  // the record order's ends
  std::uint32_t newest_ GUARDED_BY(mu_) = kNone;
  std::uint64_t generation_ GUARDED_BY(mu_);
  std::uint64_t refused_ GUARDED_BY(mu_) = 0;
};

// The `history` section of the configuration (registered by the collection engine, which owns the
// history): how many series it keeps.
struct HistoryPolicy {
  std::uint32_t max_series = History::Limits{}.max_series;
};

}  // namespace rdmahd
