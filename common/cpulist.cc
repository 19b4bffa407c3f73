#include "common/cpulist.h"

#include <algorithm>

#include "common/parse.h"

namespace rdmahd {
namespace {

Error Bad(std::string_view text, std::string_view what, std::string_view at) {
  std::string shown(text.substr(0, 64));
  if (text.size() > 64) shown += "...";
  return Error{"cpulist \"" + shown + "\": " + std::string(what) + " at \"" + std::string(at.substr(0, 32)) + "\""};
}

}  // namespace

CpuList::CpuList(std::vector<CpuRange> ranges) {
  std::sort(ranges.begin(), ranges.end(),
            [](const CpuRange& a, const CpuRange& b) { return a.first < b.first || (a.first == b.first && a.last < b.last); });
  for (const CpuRange& r : ranges) {
    if (!ranges_.empty() && static_cast<std::uint64_t>(ranges_.back().last) + 1 >= r.first) {
      ranges_.back().last = std::max(ranges_.back().last, r.last);
    } else {
      ranges_.push_back(r);
    }
  }
}

std::uint64_t CpuList::count() const {
  std::uint64_t n = 0;
  for (const CpuRange& r : ranges_) n += static_cast<std::uint64_t>(r.last) - r.first + 1;
  return n;
}

bool CpuList::Contains(std::uint32_t id) const {
  return std::any_of(ranges_.begin(), ranges_.end(), [id](const CpuRange& r) { return id >= r.first && id <= r.last; });
}

std::uint64_t CpuList::CountIn(const CpuList& other) const {
  std::uint64_t n = 0;
  for (const CpuRange& a : ranges_) {
    for (const CpuRange& b : other.ranges_) {
      const std::uint32_t lo = std::max(a.first, b.first);
      const std::uint32_t hi = std::min(a.last, b.last);
      if (lo <= hi) n += static_cast<std::uint64_t>(hi) - lo + 1;
    }
  }
  return n;
}

CpuList CpuList::Union(const CpuList& other) const {
  std::vector<CpuRange> all = ranges_;
  all.insert(all.end(), other.ranges_.begin(), other.ranges_.end());
  return CpuList(std::move(all));
}

std::string CpuList::ToString() const {
  std::string out;
  for (const CpuRange& r : ranges_) {
    if (!out.empty()) out += ',';
    out += std::to_string(r.first);
    if (r.last != r.first) out += '-' + std::to_string(r.last);
  }
  return out;
}

Result<CpuList> ParseCpuList(std::string_view text) {
  const std::string_view list = Trim(text);
  std::vector<CpuRange> ranges;
  if (list.empty()) return CpuList();
  std::string_view rest = list;
  auto number = [&](std::string_view s) -> Result<std::uint32_t> {
    if (s.empty() || s.find_first_not_of("0123456789") != std::string_view::npos) {
      return Bad(list, s.find(':') != std::string_view::npos || s.find('/') != std::string_view::npos
                           ? "stride form (a:b/c) is not a kernel-printed list"
                           : "bad number",
                 s.empty() ? rest : s);
    }
    auto v = ParseU64(s);
    if (!v || *v > CpuList::kMaxId) return Bad(list, "id above " + std::to_string(CpuList::kMaxId), s);
    return static_cast<std::uint32_t>(*v);
  };
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    const std::size_t dash = item.find('-');
    auto first = number(item.substr(0, dash));
    if (!first) return first.error();
    std::uint32_t last = *first;
    if (dash != std::string_view::npos) {
      auto l = number(item.substr(dash + 1));
      if (!l) return l.error();
      if (*l < *first) return Bad(list, "reversed range", item);
      last = *l;
    }
    ranges.push_back({*first, last});
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return CpuList(std::move(ranges));
}

}  // namespace rdmahd
