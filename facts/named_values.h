// Values of a set of named files read at one collection, for sets that are listed once and read
// again on every collection: a port's counter directory (CounterValues, facts/rdma_device_facts.h)
// or an ECN role folder's DCQCN parameter files (EcnParameters, facts/roce_facts.h). The names are
// listed with the folder and shared (immutable) by the collector's layout and every snapshot; a
// collection stores only the values, one slot per name, nullopt when the file was missing or
// unreadable, so it allocates per folder, not per file: eight bytes and a bit per slot (a node of a
// thousand devices holds some 200,000). Data only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rdmahd {

template <class T>
class NamedValues {
 public:
  using Names = std::vector<std::string>;  // sorted, unique

  NamedValues() = default;
  // All slots absent. `names` must be sorted and unique.
  explicit NamedValues(std::shared_ptr<const Names> names)
      : names_(std::move(names)),
        slots_(names_ ? names_->size() : 0),
        values_(slots_ + (slots_ + 63) / 64) {}
  // Convenience for tests and hand-built facts: the given values, any order, names unique.
  static NamedValues FromPairs(std::vector<std::pair<std::string, T>> values);

  // Slot access (every listed name, present or not), in name order.
  std::size_t slot_count() const { return slots_; }
  const std::string& name(std::size_t slot) const { return (*names_)[slot]; }
  std::optional<T> value(std::size_t slot) const {
    return (Bits(slot / 64) >> (slot % 64)) & 1 ? std::optional<T>(values_[slot]) : std::nullopt;
  }
  void Set(std::size_t slot, T v);
  // The shared name list (null for a default-constructed, empty value set).
  const std::shared_ptr<const Names>& names() const { return names_; }

  // Lookup by file name (binary search, no allocation).
  std::optional<T> Find(std::string_view name) const;
  // The slot of file `name` in the name list; nullopt when the list lacks it.
  std::optional<std::size_t> SlotOf(std::string_view name) const;
  bool contains(std::string_view name) const { return Find(name).has_value(); }
  // Like std::map::at, for tests: throws std::out_of_range when `name` has no value.
  T at(std::string_view name) const;
  // Number of present values.
  std::size_t size() const { return present_; }
  bool empty() const { return present_ == 0; }

 private:
  static_assert(sizeof(T) == sizeof(std::uint64_t), "presence words are stored as values");
  std::uint64_t Bits(std::size_t word) const { return static_cast<std::uint64_t>(values_[slots_ + word]); }

  std::shared_ptr<const Names> names_;
  std::size_t slots_ = 0;  // names_->size()
  // One allocation: the values, parallel to *names_ (a slot's value when its bit is set), then
  // the presence words (bit `slot % 64` of word `slot / 64`).
  std::vector<T> values_;
  std::size_t present_ = 0;
};

// The value types the facts use, instantiated once in named_values.cc.
extern template class NamedValues<std::uint64_t>;  // CounterValues
extern template class NamedValues<std::int64_t>;   // EcnParameters

}  // namespace rdmahd
