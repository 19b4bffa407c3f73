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

// One parser for the config's check and the responder's allow list: what the config accepts is what
// the responder admits by. A prefix with spaces ("10.0.0.0/ 8") passed the config and then stopped
// the responder from starting.
TEST(NetAddressTest, CidrParserClearsHostBitsAndMatchesOnTheMappedForm) {
  Result<IpNetwork> v4 = ParseCidr("192.0.2.77/24");
  ASSERT_TRUE(v4.ok()) << v4.error().message;
  EXPECT_EQ(v4->prefix, 120u);
  EXPECT_EQ(v4->network, *ParseIpAddress("192.0.2.0"));
  EXPECT_TRUE(v4->Contains(*ParseIpAddress("192.0.2.255")));
  EXPECT_TRUE(v4->Contains(*ParseIpAddress("::ffff:192.0.2.1")));
  EXPECT_FALSE(v4->Contains(*ParseIpAddress("192.0.3.1")));

  Result<IpNetwork> host = ParseCidr("2001:db8::7");
  ASSERT_TRUE(host.ok());
  EXPECT_EQ(host->prefix, 128u);
  EXPECT_TRUE(host->Contains(*ParseIpAddress("2001:db8::7")));
  EXPECT_FALSE(host->Contains(*ParseIpAddress("2001:db8::8")));

  Result<IpNetwork> odd = ParseCidr("10.0.0.0/9");  // a prefix that ends inside a byte
  ASSERT_TRUE(odd.ok());
  EXPECT_TRUE(odd->Contains(*ParseIpAddress("10.127.255.255")));
  EXPECT_FALSE(odd->Contains(*ParseIpAddress("10.128.0.0")));
  EXPECT_FALSE(ParseCidr("0.0.0.0/0")->Contains(*ParseIpAddress("2001:db8::1")));
  EXPECT_TRUE(ParseCidr("::/0")->Contains(*ParseIpAddress("192.0.2.1")));

  for (const char* bad : {"10.0.0.0/ 8", "10.0.0.0/8 ", "10.0.0.0/+8", "10.0.0.0/0008"}) {
    EXPECT_EQ(CheckIpOrCidr(bad), "prefix length must be 0 to 32") << bad;
  }
  EXPECT_EQ(CheckIpOrCidr("fd00::/129"), "prefix length must be 0 to 128");
  EXPECT_EQ(CheckIpOrCidr("node-b/24"), "not an IP address or CIDR block (10.0.0.0/24, fd00::/64)");
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
