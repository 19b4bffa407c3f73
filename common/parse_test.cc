#include "common/parse.h"

#include <gtest/gtest.h>

namespace rdmahd {
namespace {

TEST(ParseTest, TrimRemovesNewlinesAndBlankLines) {
  EXPECT_EQ(Trim("InfiniBand\n\n"), "InfiniBand");
  EXPECT_EQ(Trim("  4: ACTIVE \n"), "4: ACTIVE");
  EXPECT_EQ(Trim("\n"), "");
}

TEST(ParseTest, U64AcceptsOnlyWholeNumbers) {
  EXPECT_EQ(ParseU64("4294967295\n"), 4294967295u);
  EXPECT_EQ(ParseU64("6825908347"), 6825908347u);  // > 2^32, seen on mlx4
  EXPECT_EQ(ParseU64("18446744073709551615"), UINT64_MAX);
  EXPECT_FALSE(ParseU64("18446744073709551616"));  // overflow
  EXPECT_FALSE(ParseU64("N/A (no PMA)\n"));        // i40iw
  EXPECT_FALSE(ParseU64(""));
  EXPECT_FALSE(ParseU64("12abc"));
  EXPECT_FALSE(ParseU64("-1"));
}

TEST(ParseTest, SignedAndHex) {
  EXPECT_EQ(ParseI64("-1\n"), -1);  // numa_node of a device without NUMA affinity
  EXPECT_EQ(ParseHexU64("0x15b3"), 0x15b3u);
  EXPECT_EQ(ParseHexU64("15b3\n"), 0x15b3u);
  EXPECT_FALSE(ParseHexU64("0x"));
  EXPECT_EQ(ParseDouble(" 2.5 "), 2.5);
  EXPECT_FALSE(ParseDouble("2.5x"));
}

}  // namespace
}  // namespace rdmahd
