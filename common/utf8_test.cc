#include "common/utf8.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>

namespace rdmahd {
namespace {

const std::string kR(kUtf8Replacement);

// Reference: decode by bit pattern, then reject what the standard excludes. Written differently
// from DecodeUtf8Step (which checks the second byte's range) so the two can be compared.
bool ReferenceValid(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    std::size_t n;
    std::uint32_t cp;
    if (b < 0x80) { n = 1; cp = b; }
    else if ((b & 0xE0) == 0xC0) { n = 2; cp = b & 0x1F; }
    else if ((b & 0xF0) == 0xE0) { n = 3; cp = b & 0x0F; }
    else if ((b & 0xF8) == 0xF0) { n = 4; cp = b & 0x07; }
    else return false;
    if (i + n > s.size()) return false;
    for (std::size_t k = 1; k < n; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (c & 0x3F);
    }
    static constexpr std::uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

std::string Encode(std::uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

TEST(Utf8Test, EveryScalarValueIsKeptAndEverySurrogateReplaced) {
  for (std::uint32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    const std::string s = Encode(cp);
    const bool surrogate = cp >= 0xD800 && cp <= 0xDFFF;
    ASSERT_EQ(IsValidUtf8(s), !surrogate) << std::hex << cp;
    ASSERT_EQ(ValidUtf8(s), surrogate ? kR + kR + kR : s) << std::hex << cp;
  }
}

TEST(Utf8Test, AgreesWithAReferenceDecoderOnEveryOneToThreeByteString) {
  std::string s;
  for (std::uint32_t v = 0; v < (1u << 24); ++v) {
    for (std::size_t len = 1; len <= 3; ++len) {
      if (len < 3 && (v >> (8 * len)) != 0) continue;
      s.assign(len, '\0');
      for (std::size_t k = 0; k < len; ++k) s[k] = static_cast<char>(v >> (8 * (len - 1 - k)));
      const bool valid = IsValidUtf8(s);
      ASSERT_EQ(valid, ReferenceValid(s)) << std::hex << v << " len " << len;
      const std::string fixed = ValidUtf8(s);
      ASSERT_TRUE(ReferenceValid(fixed)) << std::hex << v;
      if (valid) {
        ASSERT_EQ(fixed, s);
      }
    }
  }
}

TEST(Utf8Test, AgreesWithAReferenceDecoderOnFourByteLeads) {
  // Every lead F0..FF with every second byte and a spread of third and fourth bytes.
  const unsigned char tails[] = {0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xF4, 0xFF};
  std::string s(4, '\0');
  for (unsigned b0 = 0xF0; b0 <= 0xFF; ++b0) {
    for (unsigned b1 = 0; b1 <= 0xFF; ++b1) {
      for (unsigned char b2 : tails) {
        for (unsigned char b3 : tails) {
          s[0] = static_cast<char>(b0);
          s[1] = static_cast<char>(b1);
          s[2] = static_cast<char>(b2);
          s[3] = static_cast<char>(b3);
          ASSERT_EQ(IsValidUtf8(s), ReferenceValid(s)) << std::hex << b0 << " " << b1 << " " << +b2 << " " << +b3;
          ASSERT_TRUE(ReferenceValid(ValidUtf8(s)));
        }
      }
    }
  }
}

TEST(Utf8Test, ReplacesMaximalSubpartsAsTheStandardRecommends) {
  // Overlong forms: C0/C1 leads and E0/F0 with too small a second byte.
  EXPECT_EQ(ValidUtf8("\xC0\xAF"), kR + kR);
  EXPECT_EQ(ValidUtf8("\xE0\x80\xAF"), kR + kR + kR);
  EXPECT_EQ(ValidUtf8("\xF0\x80\x80\xAF"), kR + kR + kR + kR);
  // Surrogate U+D800 and beyond U+10FFFF (F4 90.., F5..).
  EXPECT_EQ(ValidUtf8("\xED\xA0\x80"), kR + kR + kR);
  EXPECT_EQ(ValidUtf8("\xF4\x90\x80\x80"), kR + kR + kR + kR);
  EXPECT_EQ(ValidUtf8("\xF5\x80"), kR + kR);
  // Truncated sequences at the end: one replacement for the whole valid prefix.
  EXPECT_EQ(ValidUtf8("fw\xE2\x82"), "fw" + kR);
  EXPECT_EQ(ValidUtf8("fw\xF0\x9F\x98"), "fw" + kR);
  EXPECT_EQ(ValidUtf8("fw\xC3"), "fw" + kR);
  // A truncated sequence followed by ASCII keeps the ASCII.
  EXPECT_EQ(ValidUtf8("a\xE2\x82z"), "a" + kR + "z");
  // Lone continuation bytes and 0xFF, one replacement each.
  EXPECT_EQ(ValidUtf8("\x80\xBF\xFF"), kR + kR + kR);
  // Valid 2-, 3- and 4-byte sequences are kept as they are.
  EXPECT_EQ(ValidUtf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"), "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  EXPECT_EQ(ValidUtf8("\xEF\xBF\xBD"), kR);
  EXPECT_EQ(ValidUtf8(""), "");
  EXPECT_EQ(ValidUtf8(std::string_view("a\0b", 3)), std::string("a\0b", 3));
}

}  // namespace
}  // namespace rdmahd
