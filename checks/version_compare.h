// Dotted numeric firmware versions ("14.28.2006", "2.31.5050", "216.0.220.0", "1.27.0").
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace rdmahd {

// Components of a dotted numeric version; nullopt unless the (trimmed) text is digits separated by
// single dots ("16.35.2000" yes; "16.35.2000-LTS", "v1.2", "1..2", "" no).
std::optional<std::vector<std::uint64_t>> ParseDottedVersion(std::string_view text);

// Negative, zero or positive as a is older than, equal to or newer than b. Components compare
// numerically left to right; missing trailing components count as 0 (1.27 == 1.27.0).
// nullopt when either side is not dotted numeric: the caller reports "unknown", never guesses.
std::optional<int> CompareDottedVersions(std::string_view a, std::string_view b);

}  // namespace rdmahd
