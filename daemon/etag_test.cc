#include "daemon/etag.h"

#include <gtest/gtest.h>

#include <string>

namespace rdmahd {
namespace {

TEST(HttpServerEtagTest, WeakEtagIsStablePerBodyAndIfNoneMatchComparesWeakly) {
  const std::string tag = WeakEtag("{\"a\": 1}\n");
  EXPECT_EQ(tag, WeakEtag("{\"a\": 1}\n"));
  EXPECT_NE(tag, WeakEtag("{\"a\": 2}\n"));
  ASSERT_EQ(tag.size(), 20u) << tag;  // W/" + 16 hex digits + "
  EXPECT_EQ(tag.rfind("W/\"", 0), 0u) << tag;
  const std::string opaque = tag.substr(2);
  EXPECT_TRUE(IfNoneMatchHits(tag, tag));
  EXPECT_TRUE(IfNoneMatchHits(opaque, tag));  // weak comparison ignores W/
  EXPECT_TRUE(IfNoneMatchHits("\"x\", " + tag, tag));
  EXPECT_TRUE(IfNoneMatchHits("  \"x\" ,W/\"y\"," + opaque, tag));
  EXPECT_TRUE(IfNoneMatchHits("*", tag));
  EXPECT_FALSE(IfNoneMatchHits("", tag));
  EXPECT_FALSE(IfNoneMatchHits("\"x\"", tag));
  EXPECT_FALSE(IfNoneMatchHits(opaque.substr(0, 10), tag));      // no closing quote
  EXPECT_FALSE(IfNoneMatchHits("garbage, " + tag, tag));         // stops at what is not a tag
  EXPECT_FALSE(IfNoneMatchHits("*, \"x\"", tag));               // "*" only alone
}

}  // namespace
}  // namespace rdmahd
