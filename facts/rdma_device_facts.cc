#include "facts/rdma_device_facts.h"

#include <algorithm>
#include <stdexcept>

namespace rdmahd {

CounterValues::CounterValues(std::shared_ptr<const Names> names)
    : names_(std::move(names)), values_(names_ ? names_->size() : 0) {}

CounterValues CounterValues::FromPairs(std::vector<std::pair<std::string, std::uint64_t>> values) {
  std::sort(values.begin(), values.end());
  auto names = std::make_shared<Names>();
  names->reserve(values.size());
  for (const auto& [name, v] : values) names->push_back(name);
  CounterValues out(std::move(names));
  for (std::size_t i = 0; i < values.size(); ++i) out.Set(i, values[i].second);
  return out;
}

void CounterValues::Set(std::size_t slot, std::uint64_t v) {
  if (!values_[slot]) ++present_;
  values_[slot] = v;
}

std::optional<std::size_t> CounterValues::SlotOf(std::string_view name) const {
  if (!names_) return std::nullopt;
  auto it = std::lower_bound(names_->begin(), names_->end(), name);
  if (it == names_->end() || *it != name) return std::nullopt;
  return static_cast<std::size_t>(it - names_->begin());
}

std::optional<std::uint64_t> CounterValues::Find(std::string_view name) const {
  const std::optional<std::size_t> slot = SlotOf(name);
  return slot ? values_[*slot] : std::nullopt;
}

std::uint64_t CounterValues::at(std::string_view name) const {
  std::optional<std::uint64_t> v = Find(name);
  if (!v) throw std::out_of_range("CounterValues::at: no value for " + std::string(name));
  return *v;
}

}  // namespace rdmahd
