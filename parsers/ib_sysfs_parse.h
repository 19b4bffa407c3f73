// Pure parsers for the text of /sys/class/infiniband attributes. No I/O, so every quirk drivers
// print (extra blank lines, missing newlines, "N/A (no PMA)") is testable on strings.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "facts/rdma_device_facts.h"

namespace rdmahd {

// "4: ACTIVE\n" -> {4, "ACTIVE"}. nullopt when there is no "<digits>:" prefix or no name.
std::optional<SysfsEnumValue> ParseSysfsEnum(std::string_view text);

// ports/P/rate, e.g. "40 Gb/sec (4X QDR)", "10 Gb/sec (4X)", "2.5 Gb/sec (1X SDR)", in bytes per
// second: Gb/sec * 1e9 / 8, computed exactly in integers (40 -> 5e9, 2.5 -> 312500000), as
// node_exporter does. nullopt when the text does not start with "<number> Gb/sec".
std::optional<std::uint64_t> ParseIbRateBytesPerSecond(std::string_view text);

// ports/P/gid_attrs/types/N.
enum class GidType { kIbRoceV1, kRoceV2, kOther };
GidType ParseGidType(std::string_view text);
inline constexpr std::string_view kGidTypeRoceV2 = "RoCE v2";

// A directory entry that numbers a port or a GID table slot ("1", "254"): whole-string decimal,
// no sign, no spaces. nullopt otherwise.
std::optional<std::uint32_t> ParseSysfsIndex(std::string_view name);

// A GID as ports/P/gids/N prints it ("fe80:0000:...:0001"); an unused table slot is all zeros.
bool IsZeroGid(std::string_view text);
// That text (surrounding whitespace aside) as its 16 bytes: eight groups of four hex digits
// separated by ':', as the kernel prints every GID. nullopt for anything else.
std::optional<std::array<std::uint8_t, 16>> ParseGid(std::string_view text);
// The 16 bytes as the kernel prints them: eight groups of four lower-case hex digits.
std::string FormatGid(const std::array<std::uint8_t, 16>& gid);

// Drivers without a performance-management agent print "N/A (no PMA)" in every counters/ file
// (i40iw): the value does not exist, it is not an error of the node.
bool IsNotAvailableValue(std::string_view text);

}  // namespace rdmahd
