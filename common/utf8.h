// UTF-8 well-formedness, for text that leaves the process in a format that requires it: a
// Prometheus exposition is dropped whole by the scraper when one label value is not valid UTF-8,
// and device names, counter file names and firmware strings come from files we do not control.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace rdmahd {

// U+FFFD REPLACEMENT CHARACTER, encoded.
inline constexpr std::string_view kUtf8Replacement = "\xEF\xBF\xBD";

// One step of decoding at the start of `s` (non-empty; meant for s[0] >= 0x80, ASCII is a valid
// 1-byte step). `valid`: the first `length` bytes are one well-formed sequence (Unicode Table 3-7:
// no overlong forms, no surrogates, nothing above U+10FFFF). Otherwise `length` is the maximal
// subpart to replace by one U+FFFD (Unicode's "substitution of maximal subparts", as browsers and
// Go do): at least 1, and never a byte that could start the next sequence.
struct Utf8Step {
  std::size_t length;
  bool valid;
};
Utf8Step DecodeUtf8Step(std::string_view s);

bool IsValidUtf8(std::string_view s);

// `s` with every ill-formed subsequence replaced by U+FFFD, appended to `out`.
void AppendValidUtf8(std::string& out, std::string_view s);
std::string ValidUtf8(std::string_view s);

}  // namespace rdmahd
