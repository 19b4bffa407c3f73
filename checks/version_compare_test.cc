#include "checks/version_compare.h"

#include <gtest/gtest.h>

namespace rdmahd {
namespace {

TEST(VersionCompareTest, NumericNotLexicographic) {
  EXPECT_LT(*CompareDottedVersions("14.28.2006", "14.28.10000"), 0);  // "2006" > "10000" as text
  EXPECT_GT(*CompareDottedVersions("16.35.2000", "16.9.1000"), 0);
  EXPECT_EQ(*CompareDottedVersions("2.31.5050\n", "2.31.5050"), 0);
  EXPECT_LT(*CompareDottedVersions("2.31.5050", "2.40.7000"), 0);
}

TEST(VersionCompareTest, VendorFormatsSeenInTheField) {
  EXPECT_GT(*CompareDottedVersions("216.0.220.0", "216.0.200.0"), 0);  // bnxt_re, 4 parts
  EXPECT_EQ(*CompareDottedVersions("1.27.0", "1.27"), 0);              // hfi1, missing part = 0
  EXPECT_LT(*CompareDottedVersions("1.27", "1.27.1"), 0);
  EXPECT_GT(*CompareDottedVersions("28.39.2048", "22.38.1900"), 0);
}

TEST(VersionCompareTest, NonNumericIsUnknownNotAGuess) {
  EXPECT_FALSE(CompareDottedVersions("16.35.2000-LTS", "16.35.2000"));
  EXPECT_FALSE(CompareDottedVersions("16.35.2000", "v16"));
  EXPECT_FALSE(CompareDottedVersions("1..2", "1.2"));
  EXPECT_FALSE(CompareDottedVersions("", "1"));
  EXPECT_FALSE(CompareDottedVersions("1.2.", "1.2"));
  EXPECT_EQ(ParseDottedVersion("216.0.220.0"), (std::vector<std::uint64_t>{216, 0, 220, 0}));
}

}  // namespace
}  // namespace rdmahd
