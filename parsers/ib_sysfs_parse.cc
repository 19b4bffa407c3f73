#include "parsers/ib_sysfs_parse.h"

#include <charconv>

#include "common/parse.h"

namespace rdmahd {
namespace {
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
}  // namespace

std::optional<SysfsEnumValue> ParseSysfsEnum(std::string_view text) {
  text = Trim(text);
  std::size_t colon = text.find(':');
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  std::uint32_t id = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + colon, id);
  if (ec != std::errc() || end != text.data() + colon) return std::nullopt;
  std::string_view name = Trim(text.substr(colon + 1));
  if (name.empty()) return std::nullopt;
  return SysfsEnumValue{id, std::string(name)};
}

std::optional<std::uint64_t> ParseIbRateBytesPerSecond(std::string_view text) {
  text = Trim(text);
  // Integer part and up to 9 fraction digits, so the result is in exact bits per second.
  std::size_t i = 0;
  std::uint64_t whole = 0;
  if (i >= text.size() || !IsDigit(text[i])) return std::nullopt;
  for (; i < text.size() && IsDigit(text[i]); ++i) {
    if (whole > 1'000'000) return std::nullopt;  // beyond any link rate; also guards overflow
    whole = whole * 10 + static_cast<std::uint64_t>(text[i] - '0');
  }
  std::uint64_t frac_nano = 0;  // fraction in units of 1e-9 Gb/s = 1 bit/s
  if (i < text.size() && text[i] == '.') {
    ++i;
    std::uint64_t scale = 100'000'000;
    if (i >= text.size() || !IsDigit(text[i])) return std::nullopt;
    for (; i < text.size() && IsDigit(text[i]); ++i) {
      frac_nano += static_cast<std::uint64_t>(text[i] - '0') * scale;
      scale /= 10;
    }
  }
  std::string_view rest = Trim(text.substr(i));
  if (rest.substr(0, 6) != "Gb/sec") return std::nullopt;
  std::uint64_t bits_per_second = whole * 1'000'000'000ULL + frac_nano;
  return bits_per_second / 8;
}

GidType ParseGidType(std::string_view text) {
  text = Trim(text);
  if (text == kGidTypeRoceV2) return GidType::kRoceV2;
  if (text == "IB/RoCE v1") return GidType::kIbRoceV1;
  return GidType::kOther;
}

bool IsZeroGid(std::string_view text) {
  text = Trim(text);
  if (text.empty()) return false;
  for (char c : text) {
    if (c != '0' && c != ':') return false;
  }
  return true;
}

std::optional<std::array<std::uint8_t, 16>> ParseGid(std::string_view text) {
  text = Trim(text);
  if (text.size() != 39) return std::nullopt;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::array<std::uint8_t, 16> out{};
  for (std::size_t group = 0; group < 8; ++group) {
    const std::size_t at = group * 5;
    if (group > 0 && text[at - 1] != ':') return std::nullopt;
    int digits[4];
    for (std::size_t k = 0; k < 4; ++k) {
      digits[k] = hex(text[at + k]);
      if (digits[k] < 0) return std::nullopt;
    }
    out[2 * group] = static_cast<std::uint8_t>(digits[0] << 4 | digits[1]);
    out[2 * group + 1] = static_cast<std::uint8_t>(digits[2] << 4 | digits[3]);
  }
  return out;
}

std::string FormatGid(const std::array<std::uint8_t, 16>& gid) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(39);
  for (std::size_t i = 0; i < 16; ++i) {
    if (i > 0 && i % 2 == 0) out += ':';
    out += kHex[gid[i] >> 4];
    out += kHex[gid[i] & 0xf];
  }
  return out;
}

bool IsNotAvailableValue(std::string_view text) { return Trim(text).substr(0, 3) == "N/A"; }

std::optional<std::uint32_t> ParseSysfsIndex(std::string_view name) {
  std::uint32_t v = 0;
  auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), v);
  if (name.empty() || ec != std::errc() || end != name.data() + name.size()) return std::nullopt;
  return v;
}

}  // namespace rdmahd
