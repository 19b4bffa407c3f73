#include "common/pattern.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace rdmahd {
namespace {

using ::testing::HasSubstr;

Pattern MustCompile(const std::string& text) {
  Result<Pattern> p = Pattern::Compile(text);
  EXPECT_TRUE(p.ok()) << text << ": " << p.error().message;
  return std::move(p).value();
}

TEST(PatternTest, MatchesTheWholeName) {
  Pattern p = MustCompile("mlx5_.*");
  EXPECT_TRUE(p.FullMatch("mlx5_0"));
  EXPECT_TRUE(p.FullMatch("mlx5_"));
  EXPECT_FALSE(p.FullMatch("xmlx5_0"));
  Pattern prefix = MustCompile("mlx5_");
  EXPECT_FALSE(prefix.FullMatch("mlx5_0"));  // no implicit ".*": whole-name match, as before
  Pattern alternation = MustCompile("rx_prio\\d_pause|tx_pause_ctrl_phy");
  EXPECT_TRUE(alternation.FullMatch("rx_prio3_pause"));
  EXPECT_TRUE(alternation.FullMatch("tx_pause_ctrl_phy"));
  EXPECT_FALSE(alternation.FullMatch("rx_prio3_pause_x"));
  EXPECT_EQ(alternation.text(), "rx_prio\\d_pause|tx_pause_ctrl_phy");
}

TEST(PatternTest, MatchesBytesThatAreNotUtf8) {
  Pattern any = MustCompile("mlx5_.*");
  EXPECT_TRUE(any.FullMatch(std::string("mlx5_\xff\xfe", 7)));
  Pattern one = MustCompile("a.b");
  EXPECT_TRUE(one.FullMatch(std::string("a\xc3" "b")));
}

TEST(PatternTest, CopiesShareTheCompiledProgram) {
  Pattern p = MustCompile("a+");
  Pattern copy = p;
  EXPECT_TRUE(copy.FullMatch("aaa"));
  EXPECT_TRUE(p.FullMatch("a"));
}

TEST(PatternTest, InvalidPatternsSayWhy) {
  Result<Pattern> paren = Pattern::Compile("(mlx5");
  ASSERT_FALSE(paren.ok());
  EXPECT_THAT(paren.error().message, HasSubstr("missing )"));
  // ECMAScript-only syntax RE2 does not have is refused at compile time, not silently different.
  EXPECT_FALSE(Pattern::Compile("(a)\\1").ok());     // backreference
  EXPECT_FALSE(Pattern::Compile("mlx5(?!_bond)").ok());  // lookahead
  EXPECT_FALSE(Pattern::Compile("[z-a]").ok());
}

// std::regex recursed once per group and crashed on 20,000 nested groups.
TEST(PatternTest, DeepNestingIsRefusedOrCompiledWithoutRecursion) {
  const std::string deep = std::string(20000, '(') + "a" + std::string(20000, ')');
  Result<Pattern> p = Pattern::Compile(deep);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.error().message, HasSubstr("longer than 4096 characters (40001)"));
  // Within the length cap, RE2 nests without recursion (or refuses the depth plainly).
  const std::string within = std::string(2000, '(') + "a" + std::string(2000, ')');
  Result<Pattern> q = Pattern::Compile(within);
  if (q.ok()) {
    EXPECT_TRUE(q->FullMatch("a"));
    EXPECT_FALSE(q->FullMatch("aa"));
  } else {
    EXPECT_FALSE(q.error().message.empty());
  }
}

TEST(PatternTest, TooComplexIsRefused) {
  std::string big;
  for (int i = 0; i < 40; ++i) big += "\\w{1000}";  // 320 characters, ~40,000 instructions
  Result<Pattern> p = Pattern::Compile(big);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.error().message, HasSubstr("too complex (needs more than 1024 KiB compiled"));
  Result<Pattern> nested = Pattern::Compile("(a{100}){100}");  // RE2 caps nested repetition at 1000
  ASSERT_FALSE(nested.ok());
  EXPECT_THAT(nested.error().message, HasSubstr("invalid repetition size"));
}

// Matching is linear: the classic catastrophic-backtracking pattern answers at once.
TEST(PatternTest, NoCatastrophicBacktracking) {
  Pattern p = MustCompile("(a+)+b");
  EXPECT_FALSE(p.FullMatch(std::string(4000, 'a')));
}

}  // namespace
}  // namespace rdmahd
