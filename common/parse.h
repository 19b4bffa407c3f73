// Small, allocation-free parsers for kernel attribute text.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace rdmahd {

// Strips ASCII whitespace (including the trailing newline sysfs adds, and the extra blank line some
// drivers add) from both ends.
std::string_view Trim(std::string_view s);

// Whole-string decimal parses after Trim; nullopt on anything else ("N/A (no PMA)", "", "12abc",
// overflow). Hex only where the caller says so.
std::optional<std::uint64_t> ParseU64(std::string_view s);
std::optional<std::int64_t> ParseI64(std::string_view s);
std::optional<std::uint64_t> ParseHexU64(std::string_view s);  // with or without 0x
std::optional<double> ParseDouble(std::string_view s);

}  // namespace rdmahd
