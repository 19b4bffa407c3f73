#include "probes/probe_responder.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <gtest/gtest.h>

#include <cstring>

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
}

TEST(ResponderBudget, CountsSessionsAndBytesAndGivesThemBack) {
  ResponderBudget budget(2, 3 * 4096);
  auto first = budget.Admit(4096);
  ASSERT_TRUE(std::holds_alternative<ResponderBudget::Lease>(first));
  auto second = budget.Admit(8192);
  ASSERT_TRUE(std::holds_alternative<ResponderBudget::Lease>(second));
  EXPECT_EQ(budget.sessions(), 2u);
  EXPECT_EQ(budget.registered_bytes(), 3u * 4096);

  auto third = budget.Admit(1);
  ASSERT_TRUE(std::holds_alternative<ProbeReject>(third));
  EXPECT_EQ(std::get<ProbeReject>(third).code, RejectCode::kBusy);

  {
    ResponderBudget::Lease gone = std::move(std::get<ResponderBudget::Lease>(first));
  }  // the moved-to lease gives the share back once; the moved-from one has nothing to give
  first = ProbeReject{};
  EXPECT_EQ(budget.sessions(), 1u);
  EXPECT_EQ(budget.registered_bytes(), 8192u);

  auto too_big = budget.Admit(8192);  // 8192 + 8192 > 12288
  ASSERT_TRUE(std::holds_alternative<ProbeReject>(too_big));
  EXPECT_EQ(std::get<ProbeReject>(too_big).code, RejectCode::kNoMemory);
  auto fits = budget.Admit(4096);
  EXPECT_TRUE(std::holds_alternative<ResponderBudget::Lease>(fits));
  fits = ProbeReject{};
  second = ProbeReject{};
  EXPECT_EQ(budget.sessions(), 0u);
  EXPECT_EQ(budget.registered_bytes(), 0u);
}

TEST(ResponderBudget, LoweredCapsApplyToNewSessionsOnly) {
  ResponderBudget budget(4, 1 << 20);
  auto a = budget.Admit(4096);
  auto b = budget.Admit(4096);
  budget.SetCaps(1, 1 << 20);
  EXPECT_EQ(budget.sessions(), 2u);  // running sessions keep their leases
  EXPECT_TRUE(std::holds_alternative<ProbeReject>(budget.Admit(4096)));
  a = ProbeReject{};
  b = ProbeReject{};
  EXPECT_TRUE(std::holds_alternative<ResponderBudget::Lease>(budget.Admit(4096)));
}

TEST(ResponderBytesFor, LatencyNeedsTwoHalvesBandwidthOneBufferPageRounded) {
  EXPECT_EQ(ResponderBytesFor({ProbeKind::kLatency, 2, 1000, 0, 0}), 4096u);
  EXPECT_EQ(ResponderBytesFor({ProbeKind::kLatency, 4096, 1000, 0, 0}), 8192u);
  EXPECT_EQ(ResponderBytesFor({ProbeKind::kBandwidth, 65536, 0, 1000, 128}), 65536u);
  EXPECT_EQ(ResponderBytesFor({ProbeKind::kBandwidth, 65537, 0, 1000, 128}), 69632u);
}

// The order of refusals: a stranger learns nothing about the handshake or the caps.
TEST(AdmitProbe, RefusesStrangersThenGarbageThenOversizeThenCaps) {
  AddressAllowList allow = Allow({"192.0.2.0/24"});
  ResponderBudget budget(1, 1 << 20);
  sockaddr_in friend_addr{}, stranger{};
  friend_addr.sin_family = stranger.sin_family = AF_INET;
  inet_pton(AF_INET, "192.0.2.2", &friend_addr.sin_addr);
  inet_pton(AF_INET, "203.0.113.9", &stranger.sin_addr);
  auto* f = reinterpret_cast<sockaddr*>(&friend_addr);
  auto* s = reinterpret_cast<sockaddr*>(&stranger);
  const std::vector<std::uint8_t> good = EncodeHello({ProbeKind::kLatency, 2, 1000, 0, 0});
  const std::vector<std::uint8_t> garbage(56, 0x5a);
  const std::vector<std::uint8_t> big = EncodeHello({ProbeKind::kBandwidth, 2u << 20, 0, 1000, 16});
  ProbeHello hello;

  auto code = [](const std::variant<ResponderBudget::Lease, ProbeReject>& v) {
    return std::holds_alternative<ProbeReject>(v) ? std::get<ProbeReject>(v).code : RejectCode{0};
  };
  EXPECT_EQ(code(AdmitProbe(allow, s, garbage, 1 << 20, budget, &hello)), RejectCode::kNotAllowed);
  EXPECT_EQ(code(AdmitProbe(allow, s, good, 1 << 20, budget, &hello)), RejectCode::kNotAllowed);
  auto bad = AdmitProbe(allow, f, garbage, 1 << 20, budget, &hello);
  EXPECT_EQ(code(bad), RejectCode::kBadHandshake);
  EXPECT_NE(std::get<ProbeReject>(bad).text.find("bad magic"), std::string::npos);
  EXPECT_EQ(code(AdmitProbe(allow, f, big, 1 << 20, budget, &hello)), RejectCode::kTooLarge);
  EXPECT_EQ(budget.sessions(), 0u);  // nothing refused held a share

  auto ok = AdmitProbe(allow, f, good, 1 << 20, budget, &hello);
  ASSERT_TRUE(std::holds_alternative<ResponderBudget::Lease>(ok));
  EXPECT_EQ(hello.iterations, 1000u);
  EXPECT_EQ(std::get<ResponderBudget::Lease>(ok).bytes(), 4096u);
  EXPECT_EQ(code(AdmitProbe(allow, f, good, 1 << 20, budget, &hello)), RejectCode::kBusy);
}

}  // namespace
}  // namespace rdmahd
