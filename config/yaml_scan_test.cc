#include "config/yaml_scan.h"

#include <gtest/gtest.h>

#include <string>

namespace rdmahd {
namespace {

// "L:C<bracket>" of the unclosed flow, or "none".
std::string Unclosed(const std::string& text) {
  FlowScan scan = ScanFlows(text, 64);
  if (!scan.unclosed) return "none";
  return std::to_string(scan.unclosed->line) + ":" + std::to_string(scan.unclosed->column) +
         scan.unclosed->bracket;
}

TEST(ScanFlowsTest, FindsTheInnermostUnclosedFlow) {
  EXPECT_EQ(Unclosed("a: [1, 2\n"), "1:4[");
  EXPECT_EQ(Unclosed("a: {b: [1, 2], c: {d: 3\n"), "1:19{");
  EXPECT_EQ(Unclosed("a: [1, {b: 2}\n"), "1:4[");
  EXPECT_EQ(Unclosed("a: [1, 2]\nb: {c: 3}\n"), "none");
  EXPECT_EQ(Unclosed("- [a,\n   b\n"), "1:3[");
  EXPECT_EQ(Unclosed("--- [a\n"), "1:5[");
}

TEST(ScanFlowsTest, IgnoresBracketsThatAreNotFlowIndicators) {
  EXPECT_EQ(Unclosed("a: \"[\"\nb: '{'\n"), "none");               // quoted
  EXPECT_EQ(Unclosed("a: \"x\\\"[\"\n"), "none");                  // escaped quote inside
  EXPECT_EQ(Unclosed("a: 'it''s ['\n"), "none");                   // '' inside single quotes
  EXPECT_EQ(Unclosed("a: 1  # [ {\n# ]\n"), "none");               // comments
  EXPECT_EQ(Unclosed("a: x[1] {y\n"), "none");                     // inside a plain scalar
  EXPECT_EQ(Unclosed("a: don't [\n"), "none");                     // an apostrophe, not a quote
  EXPECT_EQ(Unclosed("a: |\n  [ {\n  x\nb: 1\n"), "none");         // literal block scalar
  EXPECT_EQ(Unclosed("- >-  # folded\n    {\n- [x]\n"), "none");   // folded, with a comment
  EXPECT_EQ(Unclosed("a: [\"]\", ']', b#c]\n"), "none");           // closers inside a flow's scalars
  EXPECT_EQ(Unclosed("a: |\n  [\nb: [\n"), "3:4[");                // the block scalar ends
  EXPECT_EQ(Unclosed("a: &x [1\n"), "1:7[");                       // after an anchor
}

TEST(ScanFlowsTest, StopsAtTheFirstOpeningPastTheDepthBound) {
  FlowScan scan = ScanFlows(std::string(1000, '['), 64);
  ASSERT_TRUE(scan.too_deep);
  EXPECT_EQ(scan.too_deep->column, 65);
  EXPECT_FALSE(ScanFlows(std::string(64, '[') + std::string(64, ']'), 64).too_deep);
  EXPECT_FALSE(ScanFlows("a: '" + std::string(1000, '[') + "'\n", 64).too_deep);
}

}  // namespace
}  // namespace rdmahd
