#include "common/excerpt.h"

#include <gtest/gtest.h>

#include <string>

#include "common/utf8.h"

namespace rdmahd {
namespace {

TEST(ExcerptTest, ShortTextIsQuotedWhole) {
  EXPECT_EQ(QuoteExcerpt("priority"), "\"priority\"");
  EXPECT_EQ(QuoteExcerpt(""), "\"\"");
}

TEST(ExcerptTest, QuotesBackslashesAndControlBytesAreEscaped) {
  EXPECT_EQ(QuoteExcerpt("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(QuoteExcerpt("roce:\r  priority"), "\"roce:\\r  priority\"");
  EXPECT_EQ(QuoteExcerpt(std::string("a\0b\n\t\x1b[2J", 9)), "\"a\\x00b\\n\\t\\x1b[2J\"");
  EXPECT_EQ(QuoteExcerpt("\xff\xc3\xbc\x7f"), "\"\\xff\\xc3\\xbc\\x7f\"");
}

TEST(ExcerptTest, LongTextShowsAtMostTheCapAndSaysHowLong) {
  const std::string key(1 << 20, 'k');
  const std::string quoted = QuoteExcerpt(key);
  EXPECT_EQ(quoted, "\"" + std::string(kExcerptBytes, 'k') + "...\" (1048576 bytes)");
  EXPECT_EQ(QuoteExcerpt("abcdefgh", 3), "\"abc...\" (8 bytes)");
}

TEST(ExcerptTest, OnlyNameLikeKeysAreShown) {
  EXPECT_TRUE(LooksLikeKeyName("require_active"));
  EXPECT_TRUE(LooksLikeKeyName("min-mtu.v2"));
  EXPECT_FALSE(LooksLikeKeyName(""));
  EXPECT_FALSE(LooksLikeKeyName("root:$y$j9T$abc:19000:0:99999:7::"));
  EXPECT_FALSE(LooksLikeKeyName("two words"));
  EXPECT_FALSE(LooksLikeKeyName("abcdef", 5));
  EXPECT_EQ(DescribeKey("prioirty"), "\"prioirty\"");
  const std::string shadow = "root:$y$j9T$Secr3tSalt$Hash:19000:0:99999:7::";
  const std::string described = DescribeKey(shadow);
  EXPECT_EQ(described, "(a key of " + std::to_string(shadow.size()) + " bytes, not shown: it is not a name)");
  EXPECT_EQ(DescribeKey("toolongkey", 4), "(a key of 10 bytes, not shown: it is not a name)");
}

TEST(ExcerptTest, CapMessageBoundsLengthAndKeepsValidUtf8) {
  const std::string long_message = "f.yaml:1:1: " + std::string(5000, 'x');
  const std::string capped = CapMessage(long_message);
  EXPECT_LE(capped.size(), kMaxMessageBytes);
  EXPECT_EQ(capped.substr(0, 12), "f.yaml:1:1: ");
  EXPECT_TRUE(capped.ends_with(" ... (message cut)")) << capped;
  // Exactly at the cap: untouched.
  const std::string exact(kMaxMessageBytes, 'y');
  EXPECT_EQ(CapMessage(exact), exact);
  // A multi-byte character is never split, and ill-formed bytes and controls are replaced.
  std::string accents;
  for (int i = 0; i < 400; ++i) accents += "\xc3\xbc";
  EXPECT_TRUE(IsValidUtf8(CapMessage(accents)));
  EXPECT_LE(CapMessage(accents).size(), kMaxMessageBytes);
  EXPECT_EQ(CapMessage("a\xff" "b\nc\x1b"), "a\xEF\xBF\xBD" "b\\x0ac\\x1b");
  EXPECT_EQ(CapMessage("tab\tkept"), "tab\tkept");
}

}  // namespace
}  // namespace rdmahd
