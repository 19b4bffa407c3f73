#include "parsers/ib_sysfs_parse.h"

#include <gtest/gtest.h>

namespace rdmahd {
namespace {

TEST(ParseSysfsEnumTest, StatesAsTheKernelPrintsThem) {
  EXPECT_EQ(ParseSysfsEnum("4: ACTIVE\n"), (SysfsEnumValue{4, "ACTIVE"}));
  EXPECT_EQ(ParseSysfsEnum("5: LinkUp\n"), (SysfsEnumValue{5, "LinkUp"}));
  EXPECT_EQ(ParseSysfsEnum("1: DOWN"), (SysfsEnumValue{1, "DOWN"}));
  EXPECT_EQ(ParseSysfsEnum("2: Polling\n"), (SysfsEnumValue{2, "Polling"}));
  EXPECT_EQ(ParseSysfsEnum("1: CA\n"), (SysfsEnumValue{1, "CA"}));
  // Names with spaces survive whole.
  EXPECT_EQ(ParseSysfsEnum("4: PortConfigurationTraining\n"),
            (SysfsEnumValue{4, "PortConfigurationTraining"}));
}

TEST(ParseSysfsEnumTest, RejectsTextWithoutIdOrName) {
  EXPECT_FALSE(ParseSysfsEnum("ACTIVE\n"));
  EXPECT_FALSE(ParseSysfsEnum(": ACTIVE"));
  EXPECT_FALSE(ParseSysfsEnum("4:"));
  EXPECT_FALSE(ParseSysfsEnum("4x: ACTIVE"));
  EXPECT_FALSE(ParseSysfsEnum(""));
}

TEST(ParseIbRateTest, GbPerSecondToBytesLikeNodeExporter) {
  EXPECT_EQ(ParseIbRateBytesPerSecond("40 Gb/sec (4X QDR)\n"), 5'000'000'000u);
  EXPECT_EQ(ParseIbRateBytesPerSecond("10 Gb/sec (4X)\n"), 1'250'000'000u);
  EXPECT_EQ(ParseIbRateBytesPerSecond("100 Gb/sec (4X EDR)"), 12'500'000'000u);
  EXPECT_EQ(ParseIbRateBytesPerSecond("2.5 Gb/sec (1X SDR)\n"), 312'500'000u);
  EXPECT_EQ(ParseIbRateBytesPerSecond("25 Gb/sec (1X EDR)\n"), 3'125'000'000u);
  EXPECT_EQ(ParseIbRateBytesPerSecond("400 Gb/sec (4X NDR)\n"), 50'000'000'000u);
  EXPECT_EQ(ParseIbRateBytesPerSecond("14.0625 Gb/sec"), 1'757'812'500u);
}

TEST(ParseIbRateTest, RejectsOtherUnitsAndGarbage) {
  EXPECT_FALSE(ParseIbRateBytesPerSecond("40 Mb/sec (4X QDR)"));
  EXPECT_FALSE(ParseIbRateBytesPerSecond("Gb/sec"));
  EXPECT_FALSE(ParseIbRateBytesPerSecond("2. Gb/sec"));
  EXPECT_FALSE(ParseIbRateBytesPerSecond(""));
  EXPECT_FALSE(ParseIbRateBytesPerSecond("99999999999999999999 Gb/sec"));
}

TEST(GidTest, TypesAndZeroGids) {
  EXPECT_EQ(ParseGidType("RoCE v2\n"), GidType::kRoceV2);
  EXPECT_EQ(ParseGidType("IB/RoCE v1\n"), GidType::kIbRoceV1);
  EXPECT_EQ(ParseGidType("roce v2"), GidType::kOther);
  EXPECT_TRUE(IsZeroGid("0000:0000:0000:0000:0000:0000:0000:0000\n"));
  EXPECT_FALSE(IsZeroGid("fe80:0000:0000:0000:0202:c9ff:fe00:0001\n"));
  EXPECT_FALSE(IsZeroGid("\n"));
}

TEST(GidTest, ParsesTheKernelsTextAndFormatsItBack) {
  const auto gid = ParseGid("fe80:0000:0000:0000:0202:C9ff:fe00:0001\n");
  ASSERT_TRUE(gid);
  EXPECT_EQ((*gid)[0], 0xfe);
  EXPECT_EQ((*gid)[1], 0x80);
  EXPECT_EQ((*gid)[10], 0xc9);
  EXPECT_EQ((*gid)[15], 0x01);
  EXPECT_EQ(FormatGid(*gid), "fe80:0000:0000:0000:0202:c9ff:fe00:0001");
  EXPECT_EQ(FormatGid(*ParseGid("0000:0000:0000:0000:0000:0000:0000:0000")), "0000:0000:0000:0000:0000:0000:0000:0000");
  EXPECT_FALSE(ParseGid("fe80::1"));                                    // IPv6 shorthand is not how sysfs prints
  EXPECT_FALSE(ParseGid("fe80:0000:0000:0000:0202:c9ff:fe00:000g"));   // not hex
  EXPECT_FALSE(ParseGid("fe80-0000:0000:0000:0202:c9ff:fe00:0001"));   // not ':'
  EXPECT_FALSE(ParseGid("fe80:0000:0000:0000:0202:c9ff:fe00:00011"));  // too long
  EXPECT_FALSE(ParseGid(""));
}

TEST(NotAvailableTest, NoPmaIsNotAValue) {
  EXPECT_TRUE(IsNotAvailableValue("N/A (no PMA)\n"));
  EXPECT_FALSE(IsNotAvailableValue("0\n"));
}

TEST(IbSysfsParseTest, SysfsIndexIsAWholeDecimal) {
  EXPECT_EQ(ParseSysfsIndex("1"), 1u);
  EXPECT_EQ(ParseSysfsIndex("254"), 254u);
  EXPECT_FALSE(ParseSysfsIndex(""));
  EXPECT_FALSE(ParseSysfsIndex("-1"));
  EXPECT_FALSE(ParseSysfsIndex("1a"));
  EXPECT_FALSE(ParseSysfsIndex(" 1"));
  EXPECT_FALSE(ParseSysfsIndex("99999999999"));  // out of range
}

}  // namespace
}  // namespace rdmahd
