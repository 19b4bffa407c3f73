#include "probes/responder_admission.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <gtest/gtest.h>

#include <cstring>

namespace rdmahd {
namespace {

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
  Result<AddressAllowList> parsed = AddressAllowList::Parse({"192.0.2.0/24"});
  ASSERT_TRUE(parsed.ok());
  const AddressAllowList& allow = *parsed;
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
