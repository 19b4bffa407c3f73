#include "parsers/host_dev_parse.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include "tests/support/test_paths.h"

namespace rdmahd {
namespace {

std::string ReadReal(const std::string& rel) {
  std::ifstream f(testing::RealFixture(rel));
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

constexpr const char* kDegraded = "sysfs/node-exporter-fixtures/sys/devices/pci0000:00/0000:00:02.1/0000:01:00.0/";

TEST(HostDevParseTest, PcieLinkOfTheRealDegradedCapture) {
  ASSERT_TRUE(testing::RealFixturesAvailable());
  auto cur = ParsePcieLinkSpeed(ReadReal(std::string(kDegraded) + "current_link_speed"));
  auto max = ParsePcieLinkSpeed(ReadReal(std::string(kDegraded) + "max_link_speed"));
  ASSERT_TRUE(cur.ok()) << cur.error().message;
  ASSERT_TRUE(max.ok()) << max.error().message;
  EXPECT_DOUBLE_EQ(*cur, 8.0);
  EXPECT_DOUBLE_EQ(*max, 16.0);
  auto width = ParsePcieLinkWidth(ReadReal(std::string(kDegraded) + "current_link_width"));
  ASSERT_TRUE(width.ok());
  EXPECT_EQ(*width, 4u);
}

TEST(HostDevParseTest, PcieLinkSpeedForms) {
  EXPECT_DOUBLE_EQ(*ParsePcieLinkSpeed("2.5 GT/s\n"), 2.5);  // before kernel 4.17: no "PCIe"
  EXPECT_DOUBLE_EQ(*ParsePcieLinkSpeed("32.0 GT/s PCIe\n"), 32.0);
  for (const char* bad : {"Unknown\n", "", "GT/s", "8.0 GT/s PCI", "-8 GT/s", "1e300 GT/s", "nan GT/s"}) {
    auto r = ParsePcieLinkSpeed(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.error().message.find("not a PCIe link speed"), std::string::npos);
    }
  }
}

TEST(HostDevParseTest, PcieLinkWidthForms) {
  EXPECT_EQ(*ParsePcieLinkWidth("16\n"), 16u);
  EXPECT_EQ(*ParsePcieLinkWidth("x8"), 8u);
  for (const char* bad : {"0", "255", "", "sixteen", "99999999999999999999999"}) {
    EXPECT_FALSE(ParsePcieLinkWidth(bad).ok()) << bad;
  }
}

// A 256-byte config space: status has a capability list, 0x34 -> 0x40 (power management, id 1)
// -> 0x60 (PCI Express, id 0x10) whose Device Control says MRRS 4096 (5) and MPS 256 (1).
std::string ConfigSpace(std::uint16_t devctl) {
  std::string c(256, '\0');
  c[0x06] = 0x10;
  c[0x34] = 0x40;
  c[0x40] = 0x01;
  c[0x41] = 0x60;
  c[0x60] = 0x10;
  c[0x61] = 0x00;
  c[0x60 + 8] = static_cast<char>(devctl & 0xFF);
  c[0x60 + 9] = static_cast<char>(devctl >> 8);
  return c;
}

TEST(HostDevParseTest, DeviceControlFromConfigSpace) {
  auto r = ParsePcieDeviceControl(ConfigSpace((5u << 12) | (1u << 5)));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->max_read_request_bytes, 4096u);
  EXPECT_EQ(r->max_payload_bytes, 256u);
  r = ParsePcieDeviceControl(ConfigSpace((2u << 12) | (0u << 5)));  // the reset default 512
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->max_read_request_bytes, 512u);
  EXPECT_EQ(r->max_payload_bytes, 128u);
}

TEST(HostDevParseTest, DeviceControlUnreadableOrBroken) {
  // What a non-root reader gets: the 64-byte header.
  auto r = ParsePcieDeviceControl(ConfigSpace(0).substr(0, 64));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().errno_value, EACCES);
  EXPECT_NE(r.error().message.find("only 64 bytes"), std::string::npos);

  std::string no_caps = ConfigSpace(0);
  no_caps[0x06] = 0;
  EXPECT_EQ(ParsePcieDeviceControl(no_caps).error().errno_value, ENOENT);

  std::string loop = ConfigSpace(0);
  loop[0x60] = 0x05;  // not PCIe
  loop[0x61] = 0x40;  // back to the first capability
  r = ParsePcieDeviceControl(loop);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("does not end"), std::string::npos);

  std::string outside = ConfigSpace(0);
  outside[0x34] = static_cast<char>(0xFC);  // past a 128-byte dump
  EXPECT_FALSE(ParsePcieDeviceControl(outside.substr(0, 128)).ok());

  std::string truncated = ConfigSpace(0).substr(0, 0x62);  // capability header only
  EXPECT_NE(ParsePcieDeviceControl(truncated).error().message.find("truncated"), std::string::npos);

  EXPECT_FALSE(ParsePcieDeviceControl(ConfigSpace(7u << 12)).ok());  // reserved encoding
}

TEST(HostDevParseTest, RoceTos) {
  EXPECT_EQ(*ParseRoceTos("106\n"), 106u);
  EXPECT_EQ(*ParseRoceTos("0"), 0u);
  for (const char* bad : {"256", "-1", "", "0x6a", "106 107"}) EXPECT_FALSE(ParseRoceTos(bad).ok()) << bad;
}

TEST(HostDevParseTest, TrafficClass) {
  EXPECT_EQ(*ParseTrafficClass("Global tclass=106\n"), 106u);
  EXPECT_EQ(*ParseTrafficClass("106"), 106u);
  auto unset = ParseTrafficClass("Global tclass=-1\n");
  ASSERT_TRUE(unset.ok());
  EXPECT_FALSE(unset->has_value());
  for (const char* bad : {"Global tclass=", "Global tclass=abc", "tclass=300", "", "junk"}) {
    EXPECT_FALSE(ParseTrafficClass(bad).ok()) << bad;
  }
}

TEST(HostDevParseTest, IommuModes) {
  EXPECT_EQ(ParseIommuCmdline("BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet\n").mode, "default");
  auto pt = ParseIommuCmdline("BOOT_IMAGE=/vmlinuz intel_iommu=on iommu=pt quiet");
  EXPECT_EQ(pt.mode, "passthrough");
  EXPECT_EQ(pt.options, "intel_iommu=on iommu=pt");
  EXPECT_EQ(ParseIommuCmdline("intel_iommu=on").mode, "translated");
  EXPECT_EQ(ParseIommuCmdline("amd_iommu=off").mode, "off");
  EXPECT_EQ(ParseIommuCmdline("iommu.passthrough=1").mode, "passthrough");
  EXPECT_EQ(ParseIommuCmdline("iommu=pt iommu.passthrough=0").mode, "translated");
  EXPECT_EQ(ParseIommuCmdline("intel_iommu=on,sm_on").mode, "translated");
  EXPECT_EQ(ParseIommuCmdline("").mode, "default");
  EXPECT_EQ(ParseIommuCmdline("iommu=").mode, "default");
}

}  // namespace
}  // namespace rdmahd
