#include "common/utf8.h"

namespace rdmahd {

Utf8Step DecodeUtf8Step(std::string_view s) {
  const auto b0 = static_cast<unsigned char>(s[0]);
  if (b0 < 0x80) return {1, true};
  // Sequence length and the allowed range of the second byte, which is where overlong forms
  // (E0, F0), surrogates (ED) and code points above U+10FFFF (F4) are excluded.
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return {1, false};  // continuation byte, C0/C1 (always overlong) or F5..FF
  }
  for (std::size_t i = 1; i < n; ++i) {
    if (i >= s.size()) return {i, false};  // truncated at the end
    const auto b = static_cast<unsigned char>(s[i]);
    const bool ok = i == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
    if (!ok) return {i, false};
  }
  return {n, true};
}

bool IsValidUtf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    Utf8Step step = DecodeUtf8Step(s.substr(i));
    if (!step.valid) return false;
    i += step.length;
  }
  return true;
}

void AppendValidUtf8(std::string& out, std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t run = i;  // ASCII run, copied at once
    while (run < s.size() && static_cast<unsigned char>(s[run]) < 0x80) ++run;
    out.append(s.data() + i, run - i);
    i = run;
    if (i == s.size()) break;
    Utf8Step step = DecodeUtf8Step(s.substr(i));
    if (step.valid) {
      out.append(s.data() + i, step.length);
    } else {
      out.append(kUtf8Replacement);
    }
    i += step.length;
  }
}

std::string ValidUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  AppendValidUtf8(out, s);
  return out;
}

}  // namespace rdmahd
