#include "common/net_address.h"

#include <gtest/gtest.h>

#include <string>

namespace rdmahd {
namespace {

TEST(NetAddressTest, IpLiterals) {
  EXPECT_TRUE(IsIpLiteral("10.0.0.2"));
  EXPECT_TRUE(IsIpLiteral("fd00::1"));
  EXPECT_TRUE(IsIpLiteral("::ffff:10.0.0.1"));
  EXPECT_FALSE(IsIpLiteral("10.0.0"));
  EXPECT_FALSE(IsIpLiteral("10.0.0.256"));
  EXPECT_FALSE(IsIpLiteral("[fd00::1]"));
  EXPECT_FALSE(IsIpLiteral("node-b"));
  EXPECT_FALSE(IsIpLiteral(""));
  EXPECT_FALSE(IsIpLiteral(std::string(100, '1')));
}

TEST(NetAddressTest, CidrBlocks) {
  EXPECT_EQ(CheckIpOrCidr("10.0.0.0/24"), std::nullopt);
  EXPECT_EQ(CheckIpOrCidr("10.0.0.7"), std::nullopt);
  EXPECT_EQ(CheckIpOrCidr("fd00::/64"), std::nullopt);
  EXPECT_EQ(CheckIpOrCidr("0.0.0.0/0"), std::nullopt);
  EXPECT_NE(CheckIpOrCidr("10.0.0.0/33"), std::nullopt);
  EXPECT_NE(CheckIpOrCidr("fd00::/129"), std::nullopt);
  EXPECT_NE(CheckIpOrCidr("10.0.0.0/"), std::nullopt);
  EXPECT_NE(CheckIpOrCidr("10.0.0.0/-1"), std::nullopt);
  EXPECT_NE(CheckIpOrCidr("node-b/24"), std::nullopt);
}

TEST(NetAddressTest, PeerTargets) {
  for (const char* ok : {"10.0.0.2", "fd00::2", "node-b", "node-b.fabric.example", "node-b.fabric.example.", "n_1.x"}) {
    EXPECT_EQ(CheckPeerTarget(ok), std::nullopt) << ok;
  }
  for (const char* bad : {"", "node b", "node-b:18600", "[fd00::1]", "http://node-b", "-node", "node-.x", "a..b", "."}) {
    EXPECT_NE(CheckPeerTarget(bad), std::nullopt) << bad;
  }
  EXPECT_NE(CheckPeerTarget(std::string(64, 'a') + ".example"), std::nullopt);  // a 64-character label
  EXPECT_EQ(CheckPeerTarget(std::string(63, 'a') + ".example"), std::nullopt);
}

}  // namespace
}  // namespace rdmahd
