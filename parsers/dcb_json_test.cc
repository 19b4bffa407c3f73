#include "parsers/dcb_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <map>
#include <vector>

namespace rdmahd {
namespace {

TEST(DcbPfcJsonTest, CurrentIproute2FormatWithStats) {
  auto pfc = ParseDcbPfcJson(
      R"({"pfc_cap":8,"macsec_bypass":false,"delay":4096,)"
      R"("prio_pfc":[false,false,false,true,false,false,false,false],)"
      R"("requests":[0,0,0,217,0,0,0,0],"indications":[0,0,0,179,0,0,0,0]})");
  ASSERT_TRUE(pfc.ok()) << pfc.error().message;
  EXPECT_EQ(pfc->enabled_mask, 0x08);
  EXPECT_EQ(pfc->pfc_cap, 8);
  EXPECT_EQ(pfc->delay, 4096);
  EXPECT_FALSE(pfc->macsec_bypass);
  ASSERT_TRUE(pfc->requests);
  EXPECT_EQ((*pfc->requests)[3], 217u);
  EXPECT_EQ((*pfc->indications)[3], 179u);
}

TEST(DcbPfcJsonTest, OlderOnOffStringsAndArrayWrapping) {
  // The man page example (prio 6 and 7 on), as older iproute2 printed it and wrapped in an array.
  auto pfc = ParseDcbPfcJson(
      R"([{"pfc_cap":8,"macsec_bypass":"off","delay":4096,)"
      R"("prio_pfc":["off","off","off","off","off","off","on","on"]}])");
  ASSERT_TRUE(pfc.ok()) << pfc.error().message;
  EXPECT_EQ(pfc->enabled_mask, 0xC0);
  EXPECT_FALSE(pfc->requests.has_value());
}

TEST(DcbPfcJsonTest, MalformedIsRejectedWithTheReason) {
  auto short_array = ParseDcbPfcJson(R"({"prio_pfc":[true,false]})");
  ASSERT_FALSE(short_array.ok());
  EXPECT_NE(short_array.error().message.find("prio_pfc"), std::string::npos);
  EXPECT_FALSE(ParseDcbPfcJson("pfc-cap 8 macsec-bypass off delay 4096").ok());  // text, not -j
  EXPECT_FALSE(ParseDcbPfcJson(R"({"prio_pfc":[1,0,0,0,0,0,0,0]})").ok());
  EXPECT_FALSE(ParseDcbPfcJson(R"({"pfc_cap":-1,"prio_pfc":[false,false,false,false,false,false,false,false]})").ok());
}

TEST(DcbAppJsonTest, DscpAndDefaultEntries) {
  auto app = ParseDcbAppJson(R"({"default_prio":[0],"ethtype_prio":[[35078,3]],"dscp_prio":[[26,3],[48,6]]})");
  ASSERT_TRUE(app.ok()) << app.error().message;
  DcbState st;
  st.app = *app;
  EXPECT_EQ(DscpPriorityMap(st), (std::map<int, int>{{26, 3}, {48, 6}}));
  EXPECT_EQ(app->size(), 4u);
  auto empty = ParseDcbAppJson("{}");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(DcbAppJsonTest, OutOfRangeEntriesAreRejected) {
  EXPECT_FALSE(ParseDcbAppJson(R"({"dscp_prio":[[26,9]]})").ok());   // priority 9
  EXPECT_FALSE(ParseDcbAppJson(R"({"dscp_prio":[[64,3]]})").ok());   // DSCP 64
  EXPECT_FALSE(ParseDcbAppJson(R"({"dscp_prio":[26,3]})").ok());     // not pairs
}

// What a capture writes from DCB netlink's answer reads back as it was (daemon/capture.cc).
TEST(DcbJsonWriterTest, PfcAndAppJsonReadBackAsTheyWereWritten) {
  PfcConfig pfc;
  pfc.pfc_cap = 8;
  pfc.enabled_mask = 0b00001000;
  pfc.delay = 4096;
  pfc.macsec_bypass = true;
  pfc.requests = std::array<std::uint64_t, kDcbPriorities>{0, 0, 0, 12, 0, 0, 0, 0};
  auto back = ParseDcbPfcJson(DcbPfcJsonOf(pfc));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->enabled_mask, pfc.enabled_mask);
  EXPECT_EQ(back->pfc_cap, 8);
  EXPECT_EQ(back->delay, 4096);
  EXPECT_TRUE(back->macsec_bypass);
  ASSERT_TRUE(back->requests.has_value());
  EXPECT_EQ((*back->requests)[3], 12u);
  EXPECT_FALSE(back->indications.has_value());

  const std::vector<DcbAppEntry> app = {{kAppSelectorDscp, 26, 3}, {kAppSelectorDscp, 48, 6},
                                        {kAppSelectorEthertype, 0x8915, 3}, {2, 4791, 3}};
  auto entries = ParseDcbAppJson(DcbAppJsonOf(app));
  ASSERT_TRUE(entries.ok()) << entries.error().message;
  EXPECT_THAT(*entries, ::testing::UnorderedElementsAreArray(app));
  DcbState state;
  state.app = *entries;
  EXPECT_EQ(DscpPriorityMap(state), (std::map<int, int>{{26, 3}, {48, 6}}));
}

}  // namespace
}  // namespace rdmahd
