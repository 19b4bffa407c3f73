#include "common/excerpt.h"

#include <algorithm>
#include <cstdio>

#include "common/utf8.h"

namespace rdmahd {
namespace {

void AppendHex(std::string& out, unsigned char c) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += "\\x";
  out += kHex[c >> 4];
  out += kHex[c & 0xF];
}

}  // namespace

void AppendAsciiEscaped(std::string& out, unsigned char c) {
  switch (c) {
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    default:
      if (c < 0x20 || c == 0x7F) {
        AppendHex(out, c);
      } else {
        out += static_cast<char>(c);
      }
  }
}

std::string QuoteExcerpt(std::string_view s, std::size_t max_bytes) {
  const std::string_view shown = s.substr(0, max_bytes);
  std::string out = "\"";
  for (char ch : shown) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"') {
      out += "\\\"";
    } else if (c >= 0x80) {
      AppendHex(out, c);
    } else {
      AppendAsciiEscaped(out, c);
    }
  }
  if (shown.size() < s.size()) return out + "...\" (" + std::to_string(s.size()) + " bytes)";
  return out + "\"";
}

bool LooksLikeKeyName(std::string_view s, std::size_t max_bytes) {
  if (s.empty() || s.size() > max_bytes) return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

std::string DescribeKey(std::string_view s, std::size_t max_bytes) {
  if (LooksLikeKeyName(s, max_bytes)) return QuoteExcerpt(s, max_bytes);
  return "(a key of " + std::to_string(s.size()) + (s.size() == 1 ? " byte" : " bytes") +
         ", not shown: it is not a name)";
}

std::string CapMessage(std::string_view message, std::size_t max_bytes) {
  static constexpr std::string_view kCut = " ... (message cut)";
  std::string out;
  out.reserve(std::min(message.size(), max_bytes + 4));
  for (std::size_t i = 0; i < message.size() && out.size() <= max_bytes;) {
    const auto c = static_cast<unsigned char>(message[i]);
    if (c < 0x80) {
      if ((c < 0x20 && c != '\t') || c == 0x7F) {
        AppendHex(out, c);
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    const Utf8Step step = DecodeUtf8Step(message.substr(i));
    if (step.valid) {
      out.append(message.substr(i, step.length));
    } else {
      out.append(kUtf8Replacement);
    }
    i += step.length;
  }
  // The loop stops once past the cap, so `out` is the whole message exactly when it fits.
  if (out.size() <= max_bytes) return out;
  std::size_t keep = max_bytes > kCut.size() ? max_bytes - kCut.size() : 0;
  while (keep > 0 && (static_cast<unsigned char>(out[keep]) & 0xC0) == 0x80) --keep;  // not inside a character
  out.resize(keep);
  return out + std::string(kCut);
}

std::string TerminalText(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      AppendAsciiEscaped(out, c);
      ++i;
      continue;
    }
    const Utf8Step step = DecodeUtf8Step(s.substr(i));
    if (!step.valid) {
      for (std::size_t k = 0; k < step.length; ++k) AppendHex(out, static_cast<unsigned char>(s[i + k]));
    } else {
      // The step is well-formed: 2 to 4 bytes, lead byte's payload then 6 bits per continuation.
      char32_t cp = c & (step.length == 2 ? 0x1F : step.length == 3 ? 0x0F : 0x07);
      for (std::size_t k = 1; k < step.length; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
      // C1 controls (U+009B is a CSI to some terminals), line and paragraph separators, and the
      // bidirectional marks, embeddings, overrides and isolates that reorder what a terminal shows.
      const bool invisible = (cp >= 0x80 && cp <= 0x9F) || cp == 0x061C || cp == 0x200E || cp == 0x200F ||
                             (cp >= 0x2028 && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
      if (invisible) {
        char buf[16];
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
        out += buf;
      } else {
        out.append(s.substr(i, step.length));
      }
    }
    i += step.length;
  }
  return out;
}

}  // namespace rdmahd
