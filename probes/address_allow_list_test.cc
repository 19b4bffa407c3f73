#include "probes/address_allow_list.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace rdmahd {
namespace {

AddressAllowList Allow(const std::vector<std::string>& entries) {
  Result<AddressAllowList> list = AddressAllowList::Parse(entries);
  EXPECT_TRUE(list.ok()) << list.error().message;
  return list.ok() ? *list : AddressAllowList();
}

TEST(AddressAllowList, MatchesHostsAndPrefixesOfBothFamilies) {
  AddressAllowList a = Allow({"192.0.2.1", "198.51.100.0/24", "10.0.0.0/9", "fd00:1::/32", "2001:db8::7"});
  EXPECT_TRUE(a.Allows("192.0.2.1"));
  EXPECT_FALSE(a.Allows("192.0.2.2"));
  EXPECT_TRUE(a.Allows("198.51.100.0"));
  EXPECT_TRUE(a.Allows("198.51.100.255"));
  EXPECT_FALSE(a.Allows("198.51.101.1"));
  EXPECT_TRUE(a.Allows("10.127.255.255"));  // /9: a prefix that ends inside a byte
  EXPECT_FALSE(a.Allows("10.128.0.0"));
  EXPECT_TRUE(a.Allows("fd00:1:ffff::1"));
  EXPECT_FALSE(a.Allows("fd00:2::1"));
  EXPECT_TRUE(a.Allows("2001:db8::7"));
  EXPECT_FALSE(a.Allows("2001:db8::8"));
  EXPECT_FALSE(a.Allows("not an address"));
}

TEST(AddressAllowList, MappedV4PeersMatchV4EntriesButV6PrefixesDoNotLeakToV4) {
  AddressAllowList a = Allow({"192.0.2.0/24"});
  EXPECT_TRUE(a.Allows("::ffff:192.0.2.9"));  // how rdma_cm may report a v4 peer on a v6 listener
  sockaddr_in6 s6{};
  s6.sin6_family = AF_INET6;
  inet_pton(AF_INET6, "::ffff:192.0.2.9", &s6.sin6_addr);
  EXPECT_TRUE(a.Allows(reinterpret_cast<sockaddr*>(&s6)));
  sockaddr_in s4{};
  s4.sin_family = AF_INET;
  inet_pton(AF_INET, "192.0.3.9", &s4.sin_addr);
  EXPECT_FALSE(a.Allows(reinterpret_cast<sockaddr*>(&s4)));
  EXPECT_FALSE(a.Allows(static_cast<const sockaddr*>(nullptr)));

  AddressAllowList v6all = Allow({"::/0"});
  EXPECT_TRUE(v6all.Allows("2001:db8::1"));
  AddressAllowList v4all = Allow({"0.0.0.0/0"});
  EXPECT_TRUE(v4all.Allows("203.0.113.5"));
  EXPECT_FALSE(v4all.Allows("2001:db8::1"));  // 0.0.0.0/0 is every IPv4 address, not every address
}

TEST(AddressAllowList, EmptyAllowsNobodyAndHostBitsMeanTheNetwork) {
  EXPECT_FALSE(Allow({}).Allows("192.0.2.1"));
  AddressAllowList a = Allow({"192.0.2.77/24"});
  EXPECT_TRUE(a.Allows("192.0.2.1"));
  EXPECT_FALSE(a.Allows("192.0.3.77"));
}

TEST(AddressAllowList, RefusesWhatIsNotAnAddressOrPrefix) {
  for (const char* bad : {"192.0.2.1/33", "fd00::/129", "192.0.2.1/", "192.0.2.1/-1", "192.0.2.1/8x", "host.example",
                          "192.0.2.256", ""}) {
    Result<AddressAllowList> got = AddressAllowList::Parse({bad});
    EXPECT_FALSE(got.ok()) << bad;
    if (!got.ok()) {
      EXPECT_NE(got.error().message.find("responder.allow"), std::string::npos);
    }
  }
  // The entry is quoted escaped: a control sequence in the config never reaches a terminal.
  Result<AddressAllowList> got = AddressAllowList::Parse({"192.0.2.1/2\x1b[2J"});
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().message, "responder.allow: \"192.0.2.1/2\\x1b[2J\": prefix length must be 0 to 32");
}

}  // namespace
}  // namespace rdmahd
