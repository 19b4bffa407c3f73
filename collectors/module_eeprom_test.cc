// The module_eeprom collector over a fake ethtool generic netlink transport answering
// MODULE_EEPROM_GET from pages (no NIC in the VM's kernel has a module EEPROM), through
// parsers/module_eeprom into the optics check; and the real kernel's answer for loopback.
//
// The SFP of the main test is built from the SFF-8472 tables: its temperature reading and
// thresholds are corpus 64's (57.09 C; 80/-10/70/0 C), its bias and TX power thresholds corpus
// 67's (13/4/12.5/5 mA; 1.0/0.2512/0.7943/0.3162 mW), both read in place from their `ethtool -m`
// text; the supply voltage, bias, TX power and RX power readings and the voltage and RX power
// thresholds are values this test chose (no capture has them), RX power 0: the fiber unplugged.
#include "collectors/module_eeprom.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <libmnl/libmnl.h>
#include <linux/ethtool.h>
#include <linux/ethtool_netlink.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <tuple>

#include "core/check.h"
#include "facts/module_facts.h"
#include "tests/support/fake_genl_transport.h"
#include "tests/support/genl_test_message.h"
#include "tests/support/test_files.h"
#include "tests/support/test_paths.h"

namespace rdmahd {
namespace {

using ::testing::HasSubstr;
using testing::FakeGenlTransport;

constexpr std::uint16_t kEthtool = 27;

using Page = std::vector<std::uint8_t>;
using Where = std::tuple<std::uint8_t /*i2c*/, std::uint8_t /*page*/, std::uint8_t /*bank*/, std::uint32_t /*offset*/>;

// The number after `label` up to its colon in an `ethtool -m` text ("...threshold   : 80.00 degrees C").
double EthtoolValue(const std::string& text, const std::string& label) {
  const std::size_t at = text.find(label);
  EXPECT_NE(at, std::string::npos) << label;
  if (at == std::string::npos) return NAN;
  const std::size_t colon = text.find(':', at);
  return std::stod(text.substr(colon + 1));
}

void PutU16(Page& p, std::size_t at, long v) {
  const auto u = static_cast<std::uint16_t>(v);
  p[at] = static_cast<std::uint8_t>(u >> 8);
  p[at + 1] = static_cast<std::uint8_t>(u & 0xFF);
}

void PutAscii(Page& p, std::size_t at, std::size_t len, const std::string& s) {
  for (std::size_t i = 0; i < len; ++i) p[at + i] = i < s.size() ? static_cast<std::uint8_t>(s[i]) : ' ';
}

// Four thresholds (high alarm, low alarm, high warning, low warning) at `at`, each value / unit.
void PutThresholds(Page& p, std::size_t at, std::array<double, 4> values, double unit) {
  for (std::size_t i = 0; i < 4; ++i) PutU16(p, at + 2 * i, std::lround(values[i] / unit));
}

struct Sfp {
  Page a0 = Page(128, 0), a2 = Page(128, 0);
};

// The checksums a module's maker writes: A0h CC_BASE (63 over 0-62), CC_EXT (95 over 64-94), A2h
// CC_DMI (95 over 0-94), the low 8 bits of each sum.
std::uint8_t Sum(const Page& p, std::size_t first, std::size_t last) {
  unsigned s = 0;
  for (std::size_t i = first; i <= last; ++i) s += p[i];
  return static_cast<std::uint8_t>(s & 0xFF);
}

void Seal(Sfp& s) {
  s.a0[63] = Sum(s.a0, 0, 62);
  s.a0[95] = Sum(s.a0, 64, 94);
  s.a2[95] = Sum(s.a2, 0, 94);
}

Sfp RealThresholdSfp() {
  const std::string c64 = testing::ReadRealFixture("corpus/64_ethtool_m_grep_temperature_sfp_enp3s0f0np0_beszel554.txt");
  const std::string c67 = testing::ReadRealFixture("corpus/67_ethtool_m_dom_thresholds_excerpt_telegraf16604.txt");
  Sfp s;
  s.a0[0] = 0x03;                            // SFF-8024: SFP
  PutAscii(s.a0, 20, 16, "FS");              // vendor name
  PutAscii(s.a0, 40, 16, "SFP-10GLR-31");    // part number
  PutAscii(s.a0, 68, 16, "F2030512345");     // serial
  s.a0[92] = 0x68;  // digital diagnostics, internally calibrated, average RX power
  s.a0[93] = 0x80;  // alarm/warning flags implemented
  const auto t = [&](const char* what) { return EthtoolValue(c64, std::string("Module temperature ") + what); };
  PutThresholds(s.a2, 0, {t("high alarm threshold"), t("low alarm threshold"), t("high warning threshold"),
                          t("low warning threshold")}, 1.0 / 256);
  PutThresholds(s.a2, 8, {3.6, 3.0, 3.5, 3.1}, 1e-4);  // chosen
  const auto bias = [&](const char* what) { return EthtoolValue(c67, std::string("Laser bias current ") + what); };
  PutThresholds(s.a2, 16, {bias("high alarm threshold"), bias("low alarm threshold"), bias("high warning threshold"),
                           bias("low warning threshold")}, 0.002);
  const auto txp = [&](const char* what) { return EthtoolValue(c67, std::string("Laser output power ") + what); };
  PutThresholds(s.a2, 24, {txp("high alarm threshold"), txp("low alarm threshold"), txp("high warning threshold"),
                           txp("low warning threshold")}, 1e-4);
  PutThresholds(s.a2, 32, {1.0, 0.02, 0.7943, 0.0316}, 1e-4);  // chosen: RX power, mW
  PutU16(s.a2, 96, std::lround(EthtoolValue(c64, "Module temperature  ") * 256));
  PutU16(s.a2, 98, 33000);  // 3.3 V
  PutU16(s.a2, 100, 3000);  // 6 mA
  PutU16(s.a2, 102, 5000);  // 0.5 mW
  PutU16(s.a2, 104, 0);     // no light
  Seal(s);
  return s;
}

struct Kernel {
  std::map<Where, Page> pages;
  int lower_errno = 0;  // the driver's answer for every read (EOPNOTSUPP, EIO)
  std::vector<Where> asked;

  std::unique_ptr<FakeGenlTransport> Transport() {
    return std::make_unique<FakeGenlTransport>(kEthtool, [this](const GenlMessage& m, bool dump)
                                                              -> Result<FakeGenlTransport::Datagrams> {
      EXPECT_FALSE(dump);
      EXPECT_EQ(m.cmd, ETHTOOL_MSG_MODULE_EEPROM_GET);
      Where w{};
      std::uint32_t length = 0;
      auto attrs = SplitNlAttrs(m.attrs, "test", "request");
      for (const NlAttr& a : *attrs) {
        switch (a.type) {
          case ETHTOOL_A_MODULE_EEPROM_I2C_ADDRESS: std::get<0>(w) = a.payload[0]; break;
          case ETHTOOL_A_MODULE_EEPROM_PAGE: std::get<1>(w) = a.payload[0]; break;
          case ETHTOOL_A_MODULE_EEPROM_BANK: std::get<2>(w) = a.payload[0]; break;
          case ETHTOOL_A_MODULE_EEPROM_OFFSET: std::get<3>(w) = *NlAttrAs<std::uint32_t>(a, "t", "offset", "u32"); break;
          case ETHTOOL_A_MODULE_EEPROM_LENGTH: length = *NlAttrAs<std::uint32_t>(a, "t", "length", "u32"); break;
          default: break;
        }
      }
      EXPECT_EQ(length, 128u);
      asked.push_back(w);
      testing::GenlDatagram d;
      auto it = pages.find(w);
      if (lower_errno != 0 || it == pages.end()) {
        d.Error(lower_errno != 0 ? lower_errno : EINVAL, m.header.nlmsg_seq);
        return FakeGenlTransport::Datagrams{d.bytes()};
      }
      nlmsghdr* nlh = d.Begin(kEthtool, ETHTOOL_MSG_MODULE_EEPROM_GET_REPLY, m.header.nlmsg_seq);
      nlattr* h = mnl_attr_nest_start(nlh, ETHTOOL_A_MODULE_EEPROM_HEADER);
      mnl_attr_put_strz(nlh, ETHTOOL_A_HEADER_DEV_NAME, "ens1f0np0");
      mnl_attr_nest_end(nlh, h);
      mnl_attr_put(nlh, ETHTOOL_A_MODULE_EEPROM_DATA, it->second.size(), it->second.data());
      d.End();
      return FakeGenlTransport::Datagrams{d.bytes()};
    });
  }
};

Topology OneNetdev() {
  Topology t;
  t.class_dir_present = true;
  t.links.push_back({"mlx5_0", 1, "ens1f0np0"});
  return t;
}

const ModuleNetdevFacts& Netdev(const testing::CollectedRun& r) { return r.snapshot.Get<ModuleEepromFacts>()->netdevs.at(0); }

testing::CollectedRun CollectOnce(Collector& c, const NodeFs& fs) { return testing::CollectAndRender(c, fs, OneNetdev()); }

TEST(ModuleCollectorTest, SfpPagesAreReadDecodedRenderedAndJudged) {
  if (!testing::RealFixturesAvailable()) GTEST_SKIP() << "../shared/fixtures/real not present";
  const Sfp sfp = RealThresholdSfp();
  Kernel k;
  k.pages[{0x50, 0, 0, 0}] = sfp.a0;
  k.pages[{0x51, 0, 0, 0}] = sfp.a2;
  ModuleCollector c(k.Transport());
  testing::CollectedRun r = CollectOnce(c, testing::FakeKernelFs());
  // Lower A0h, upper A0h (refused here: EINVAL, left out), A2h.
  EXPECT_EQ(k.asked, (std::vector<Where>{{0x50, 0, 0, 0}, {0x50, 0, 0, 128}, {0x51, 0, 0, 0}}));
  EXPECT_TRUE(r.outcome.errors.empty());
  const ModuleNetdevFacts& f = Netdev(r);
  ASSERT_TRUE(f.read) << f.note;
  EXPECT_TRUE(f.dom->has_dom);
  EXPECT_EQ(f.dom->vendor_name, "FS");
  ASSERT_TRUE(f.dom->temperature_c.has_value());
  EXPECT_NEAR(*f.dom->temperature_c, 57.09, 0.005);

  EXPECT_THAT(r.text, HasSubstr("rdma_module_info{netdev=\"ens1f0np0\",identifier=\"SFP\",vendor=\"FS\","
                                "part_number=\"SFP-10GLR-31\",serial_number=\"F2030512345\"} 1\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_module_diagnostics_present{netdev=\"ens1f0np0\"} 1\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_module_supply_voltage_volts{netdev=\"ens1f0np0\"} 3.3\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_module_lane_tx_bias_amperes{netdev=\"ens1f0np0\",lane=\"1\"} 0.006\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_module_lane_tx_power_watts{netdev=\"ens1f0np0\",lane=\"1\"} 5e-04\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_module_lane_rx_power_watts{netdev=\"ens1f0np0\",lane=\"1\"} 0\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_module_lane_laser_off{netdev=\"ens1f0np0\",lane=\"1\"} 0\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_module_temperature_threshold_celsius{netdev=\"ens1f0np0\",threshold=\"high_alarm\"} 80\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_module_tx_bias_threshold_amperes{netdev=\"ens1f0np0\",threshold=\"low_alarm\"} 0.004\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_module_tx_power_threshold_watts{netdev=\"ens1f0np0\",threshold=\"low_warning\"} 0.0003162\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_module_eeprom_checksum_ok{netdev=\"ens1f0np0\",checksum=\"a2h_cc_dmi\"} 1\n"));
  EXPECT_EQ(testing::RenderedFamilies(r.text), testing::DocumentedFamilies("(collector `module_eeprom`)"));

  // The optics check on what was collected: no light is below the RX low alarm.
  Config config;
  auto out = RunRegisteredCheck("module_health", r.snapshot, config);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].verdict, Verdict::kFailed);
  EXPECT_EQ(out[0].reason, "SFP FS SFP-10GLR-31: lane 1 RX power 0.0000 mW at or below its low alarm -16.99 dBm (0.0200 mW)");
  EXPECT_THAT(out[0].fix, HasSubstr("clean the fiber connectors at both ends"));
}

// A module whose A2h thresholds no longer match their checksum: only the checksums are exported
// (no identity, no reading, no threshold), and module_health is unknown naming the checksum.
TEST(ModuleCollectorTest, AChecksumMismatchExportsNoReadings) {
  if (!testing::RealFixturesAvailable()) GTEST_SKIP() << "../shared/fixtures/real not present";
  Sfp sfp = RealThresholdSfp();
  const std::uint8_t stored = sfp.a2[95];
  sfp.a2[1] ^= 0x01;  // the temperature high alarm, one bit off
  Kernel k;
  k.pages[{0x50, 0, 0, 0}] = sfp.a0;
  k.pages[{0x51, 0, 0, 0}] = sfp.a2;
  ModuleCollector c(k.Transport());
  testing::CollectedRun r = CollectOnce(c, testing::FakeKernelFs());
  EXPECT_TRUE(r.outcome.errors.empty());
  ASSERT_TRUE(Netdev(r).read) << Netdev(r).note;
  EXPECT_EQ(r.text.find("rdma_module_temperature_celsius"), std::string::npos) << r.text;
  EXPECT_EQ(r.text.find("rdma_module_info"), std::string::npos) << r.text;
  EXPECT_EQ(r.text.find("_threshold_"), std::string::npos) << r.text;
  EXPECT_THAT(r.text, HasSubstr("rdma_module_eeprom_checksum_ok{netdev=\"ens1f0np0\",checksum=\"a0h_cc_base\"} 1\n"));
  EXPECT_THAT(r.text, HasSubstr("rdma_module_eeprom_checksum_ok{netdev=\"ens1f0np0\",checksum=\"a2h_cc_dmi\"} 0\n"));
  Config config;
  auto out = RunRegisteredCheck("module_health", r.snapshot, config);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].verdict, Verdict::kUnknown);
  char expected[160];
  std::snprintf(expected, sizeof(expected),
                "SFF-8472 A2h CC_DMI checksum mismatch on ens1f0np0's module: stored 0x%02x, computed 0x%02x over "
                "bytes 0-94 (thresholds and calibration); readings not judged",
                stored, static_cast<std::uint8_t>(stored + ((sfp.a2[1] & 0x01) ? 1 : -1)));
  EXPECT_EQ(out[0].reason, expected);
}

TEST(ModuleCollectorTest, PagesFollowTheMemoryMap) {
  // SFF-8636 QSFP28, paged: page 03h for the thresholds; flat: none.
  Kernel qsfp;
  Page lower(128, 0);
  lower[0] = 0x11;
  qsfp.pages[{0x50, 0, 0, 0}] = lower;
  ModuleCollector c1(qsfp.Transport());
  CollectOnce(c1, testing::FakeKernelFs());
  EXPECT_EQ(qsfp.asked, (std::vector<Where>{{0x50, 0, 0, 0}, {0x50, 0, 0, 128}, {0x50, 3, 0, 128}}));
  Kernel flat;
  lower[2] = 0x04;
  flat.pages[{0x50, 0, 0, 0}] = lower;
  ModuleCollector c2(flat.Transport());
  CollectOnce(c2, testing::FakeKernelFs());
  EXPECT_EQ(flat.asked, (std::vector<Where>{{0x50, 0, 0, 0}, {0x50, 0, 0, 128}}));
  // CMIS QSFP-DD, paged: pages 01h, 02h and 11h (bank 0).
  Kernel cmis;
  Page cl(128, 0);
  cl[0] = 0x18;
  cmis.pages[{0x50, 0, 0, 0}] = cl;
  ModuleCollector c3(cmis.Transport());
  CollectOnce(c3, testing::FakeKernelFs());
  EXPECT_EQ(cmis.asked, (std::vector<Where>{{0x50, 0, 0, 0}, {0x50, 0, 0, 128}, {0x50, 1, 0, 128}, {0x50, 2, 0, 128},
                                            {0x50, 0x11, 0, 128}}));
}

TEST(ModuleCollectorTest, NoAccessEmptyCageAndCaptureAreUnknownWithoutAnError) {
  Kernel none;
  none.lower_errno = EOPNOTSUPP;
  ModuleCollector c1(none.Transport());
  testing::CollectedRun r = CollectOnce(c1, testing::FakeKernelFs());
  EXPECT_FALSE(Netdev(r).read);
  EXPECT_THAT(Netdev(r).note, HasSubstr("gives no module EEPROM access (EOPNOTSUPP"));
  EXPECT_TRUE(r.outcome.errors.empty());
  EXPECT_EQ(r.text, "");

  Kernel empty;
  empty.lower_errno = EIO;
  ModuleCollector c2(empty.Transport());
  r = CollectOnce(c2, testing::FakeKernelFs());
  EXPECT_THAT(Netdev(r).note, HasSubstr("no module answers in the cage of ens1f0np0"));
  EXPECT_TRUE(r.outcome.errors.empty());

  Kernel capture;
  ModuleCollector c3(capture.Transport());
  r = CollectOnce(c3, NodeFs("/nonexistent-sys", "/nonexistent-proc"));
  EXPECT_TRUE(capture.asked.empty());
  EXPECT_THAT(Netdev(r).note, HasSubstr("not captured"));
  EXPECT_THAT(Netdev(r).note, HasSubstr("`ethtool -m ens1f0np0 raw on > DIR/ens1f0np0/module-eeprom.bin`"));

  Config config;
  auto out = RunRegisteredCheck("module_health", r.snapshot, config);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].verdict, Verdict::kUnknown);
  EXPECT_EQ(out[0].reason, Netdev(r).note);
}

// A capture: the flat dump `ethtool -m DEV raw on` writes (A0h then A2h, 256 bytes each), read
// from --path.dcb instead of asking the kernel, decoded and judged as the netlink pages are.
TEST(ModuleCollectorTest, ACapturedRawDumpIsDecodedWithoutAskingTheKernel) {
  if (!testing::RealFixturesAvailable()) GTEST_SKIP() << "../shared/fixtures/real not present";
  const Sfp sfp = RealThresholdSfp();
  std::string dump(512, '\0');
  std::copy(sfp.a0.begin(), sfp.a0.end(), dump.begin());
  std::copy(sfp.a2.begin(), sfp.a2.end(), dump.begin() + 256);
  testing::TempDir dir;
  dir.Write("capture/ens1f0np0/module-eeprom.bin", dump);
  Kernel k;
  ModuleCollector c(k.Transport());
  testing::CollectedRun r = CollectOnce(c, NodeFs("/nonexistent-sys", "/nonexistent-proc", dir.path() + "/capture"));
  EXPECT_TRUE(k.asked.empty());
  EXPECT_TRUE(r.outcome.errors.empty());
  ASSERT_TRUE(Netdev(r).read) << Netdev(r).note;
  EXPECT_EQ(Netdev(r).dom->vendor_name, "FS");
  Config config;
  auto out = RunRegisteredCheck("module_health", r.snapshot, config);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].verdict, Verdict::kFailed);
  EXPECT_THAT(out[0].reason, HasSubstr("lane 1 RX power 0.0000 mW at or below its low alarm -16.99 dBm"));

  // A netdev of the capture without the file is not captured; a dump of a length no map has is
  // an error naming the file.
  testing::TempDir other;
  other.MkDir("capture/ens1f0np0");
  r = CollectOnce(c, NodeFs("/nonexistent-sys", "/nonexistent-proc", other.path() + "/capture"));
  EXPECT_EQ(Netdev(r).note, "not captured: no ens1f0np0/module-eeprom.bin in --path.dcb (`ethtool -m ens1f0np0 raw on "
                            "> DIR/ens1f0np0/module-eeprom.bin` on the node writes it)");
  EXPECT_EQ(Netdev(r).dom, nullptr);  // a module not read costs no decoded DOM
  EXPECT_TRUE(r.outcome.errors.empty());
  other.Write("capture/ens1f0np0/module-eeprom.bin", std::string(300, '\x03'));
  r = CollectOnce(c, NodeFs("/nonexistent-sys", "/nonexistent-proc", other.path() + "/capture"));
  EXPECT_FALSE(Netdev(r).read);
  ASSERT_EQ(r.outcome.errors.size(), 1u);
  EXPECT_THAT(r.outcome.errors[0], HasSubstr("module-eeprom.bin: "));
}

// SIOCETHTOOL as the driver answers it: GMODULEINFO with the dump's length and map, GMODULEEEPROM
// with the bytes from the requested offset.
class FakeModuleIoctl : public EthtoolIoctl {
 public:
  explicit FakeModuleIoctl(std::vector<std::uint8_t> dump, int err = 0) : dump_(std::move(dump)), err_(err) {}
  Status Call(const std::string& ifname, std::span<std::uint8_t> buffer) override {
    std::uint32_t cmd = 0;
    std::memcpy(&cmd, buffer.data(), sizeof(cmd));
    calls.push_back(ifname + ":" + std::to_string(cmd));
    if (err_ != 0) return Error{"SIOCETHTOOL " + ifname, err_};
    if (cmd == ETHTOOL_GMODULEINFO) {
      ethtool_modinfo info{};
      info.cmd = cmd;
      info.type = ETH_MODULE_SFF_8472;
      info.eeprom_len = static_cast<std::uint32_t>(dump_.size());
      std::memcpy(buffer.data(), &info, sizeof(info));
      return Status::Ok();
    }
    ethtool_eeprom req{};
    std::memcpy(&req, buffer.data(), sizeof(req));
    EXPECT_EQ(cmd, static_cast<std::uint32_t>(ETHTOOL_GMODULEEEPROM));
    EXPECT_EQ(buffer.size(), sizeof(req) + req.len);
    std::memcpy(buffer.data() + sizeof(req), dump_.data() + req.offset, req.len);
    return Status::Ok();
  }
  std::vector<std::string> calls;

 private:
  std::vector<std::uint8_t> dump_;
  int err_;
};

// A kernel whose ethtool netlink has no MODULE_EEPROM_GET (before 5.13): the ioctl reads the flat
// dump; without CAP_NET_ADMIN the reason says the fallback needs it; with netlink working the
// ioctl is never used.
TEST(ModuleCollectorTest, TheIoctlIsTheFallbackWhenNetlinkCannotReadModules) {
  if (!testing::RealFixturesAvailable()) GTEST_SKIP() << "../shared/fixtures/real not present";
  const Sfp sfp = RealThresholdSfp();
  std::vector<std::uint8_t> dump(512, 0);
  std::copy(sfp.a0.begin(), sfp.a0.end(), dump.begin());
  std::copy(sfp.a2.begin(), sfp.a2.end(), dump.begin() + 256);

  Kernel old_kernel;
  old_kernel.lower_errno = EOPNOTSUPP;
  auto ioctl = std::make_unique<FakeModuleIoctl>(dump);
  FakeModuleIoctl* fake = ioctl.get();
  ModuleCollector c(old_kernel.Transport(), std::move(ioctl));
  testing::CollectedRun r = CollectOnce(c, testing::FakeKernelFs());
  EXPECT_EQ(fake->calls, (std::vector<std::string>{"ens1f0np0:" + std::to_string(ETHTOOL_GMODULEINFO),
                                                   "ens1f0np0:" + std::to_string(ETHTOOL_GMODULEEEPROM)}));
  ASSERT_TRUE(Netdev(r).read) << Netdev(r).note;
  EXPECT_NEAR(*Netdev(r).dom->temperature_c, 57.09, 0.005);
  EXPECT_TRUE(r.outcome.errors.empty());

  Kernel no_cap;
  no_cap.lower_errno = EOPNOTSUPP;
  ModuleCollector c2(no_cap.Transport(), std::make_unique<FakeModuleIoctl>(dump, EPERM));
  r = CollectOnce(c2, testing::FakeKernelFs());
  EXPECT_FALSE(Netdev(r).read);
  EXPECT_THAT(Netdev(r).note, HasSubstr("the SIOCETHTOOL fallback needs CAP_NET_ADMIN"));
  EXPECT_TRUE(r.outcome.errors.empty());

  Kernel modern;
  modern.pages[{0x50, 0, 0, 0}] = sfp.a0;
  modern.pages[{0x51, 0, 0, 0}] = sfp.a2;
  auto unused = std::make_unique<FakeModuleIoctl>(dump);
  FakeModuleIoctl* unused_fake = unused.get();
  ModuleCollector c3(modern.Transport(), std::move(unused));
  r = CollectOnce(c3, testing::FakeKernelFs());
  EXPECT_TRUE(Netdev(r).read);
  EXPECT_TRUE(unused_fake->calls.empty());
}

TEST(ModuleCollectorTest, ReplyBytes) {
  testing::GenlDatagram d;
  nlmsghdr* nlh = d.Begin(kEthtool, ETHTOOL_MSG_MODULE_EEPROM_GET_REPLY, 3);
  const Page data(129, 0x5A);
  mnl_attr_put(nlh, ETHTOOL_A_MODULE_EEPROM_DATA, data.size(), data.data());
  d.End();
  auto too_long = ParseModuleEepromReply(d.bytes(), kEthtool, 128, 3);
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.error().errno_value, EBADMSG);
  auto fits = ParseModuleEepromReply(d.bytes(), kEthtool, 256, 3);
  ASSERT_TRUE(fits.ok());
  EXPECT_EQ(*fits, data);

  testing::GenlDatagram no_data;
  no_data.Begin(kEthtool, ETHTOOL_MSG_MODULE_EEPROM_GET_REPLY, 3);
  no_data.End();
  auto missing = ParseModuleEepromReply(no_data.bytes(), kEthtool, 128, 3);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().errno_value, EBADMSG);

  const auto req = BuildModuleEepromGetRequest(kEthtool, "ens1f0np0", {.offset = 128, .page = 3}, 4);
  auto msgs = SplitNlMessages(req, "test");
  ASSERT_TRUE(msgs.ok());
  auto g = SplitGenlMessage(msgs->front(), "test");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->cmd, ETHTOOL_MSG_MODULE_EEPROM_GET);
}

// The real kernel: loopback has no module; unknown with the kernel's reason, no collector error.
TEST(ModuleCollectorTest, RealKernelLoopbackHasNoModule) {
  MnlGenlTransport probe(ETHTOOL_GENL_NAME);
  if (auto family = probe.FamilyId(); !family) GTEST_SKIP() << family.error().message;
  ModuleCollector c;
  Topology t;
  t.links.push_back({"mlx5_0", 1, "lo"});
  testing::CollectedRun r = testing::CollectAndRender(c, testing::FakeKernelFs(), t);
  ASSERT_TRUE(r.status.ok());
  const ModuleNetdevFacts& f = Netdev(r);
  EXPECT_FALSE(f.read);
  EXPECT_THAT(f.note, HasSubstr("EOPNOTSUPP"));
  EXPECT_TRUE(r.outcome.errors.empty());
}

}  // namespace
}  // namespace rdmahd
