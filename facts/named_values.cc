#include "facts/named_values.h"

#include <algorithm>
#include <stdexcept>

namespace rdmahd {

template <class T>
NamedValues<T> NamedValues<T>::FromPairs(std::vector<std::pair<std::string, T>> values) {
  std::sort(values.begin(), values.end());
  auto names = std::make_shared<Names>();
  names->reserve(values.size());
  for (const auto& [name, v] : values) names->push_back(name);
  NamedValues out(std::move(names));
  for (std::size_t i = 0; i < values.size(); ++i) out.Set(i, values[i].second);
  return out;
}

template <class T>
void NamedValues<T>::Set(std::size_t slot, T v) {
  T& word = values_[slots_ + slot / 64];
  const std::uint64_t bit = std::uint64_t{1} << (slot % 64);
  if ((static_cast<std::uint64_t>(word) & bit) == 0) ++present_;
  word = static_cast<T>(static_cast<std::uint64_t>(word) | bit);
  values_[slot] = v;
}

template <class T>
std::optional<std::size_t> NamedValues<T>::SlotOf(std::string_view name) const {
  if (!names_) return std::nullopt;
  auto it = std::lower_bound(names_->begin(), names_->end(), name);
  if (it == names_->end() || *it != name) return std::nullopt;
  return static_cast<std::size_t>(it - names_->begin());
}

template <class T>
std::optional<T> NamedValues<T>::Find(std::string_view name) const {
  const std::optional<std::size_t> slot = SlotOf(name);
  return slot ? value(*slot) : std::nullopt;
}

template <class T>
T NamedValues<T>::at(std::string_view name) const {
  std::optional<T> v = Find(name);
  if (!v) throw std::out_of_range("NamedValues::at: no value for " + std::string(name));
  return *v;
}

template class NamedValues<std::uint64_t>;
template class NamedValues<std::int64_t>;

}  // namespace rdmahd
