#include "checks/version_compare.h"

#include <algorithm>
#include <charconv>

#include "common/parse.h"

namespace rdmahd {

std::optional<std::vector<std::uint64_t>> ParseDottedVersion(std::string_view text) {
  text = Trim(text);
  if (text.empty()) return std::nullopt;
  std::vector<std::uint64_t> parts;
  for (;;) {
    std::size_t dot = text.find('.');
    std::string_view part = text.substr(0, dot);
    std::uint64_t v = 0;
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || ec != std::errc() || end != part.data() + part.size()) return std::nullopt;
    parts.push_back(v);
    if (dot == std::string_view::npos) break;
    text.remove_prefix(dot + 1);
  }
  return parts;
}

std::optional<int> CompareDottedVersions(std::string_view a, std::string_view b) {
  auto va = ParseDottedVersion(a);
  auto vb = ParseDottedVersion(b);
  if (!va || !vb) return std::nullopt;
  std::size_t n = std::max(va->size(), vb->size());
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t x = i < va->size() ? (*va)[i] : 0;
    std::uint64_t y = i < vb->size() ? (*vb)[i] : 0;
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

}  // namespace rdmahd
