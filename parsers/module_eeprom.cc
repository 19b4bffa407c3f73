#include "parsers/module_eeprom.h"

#include <cmath>
#include <cstring>
#include <type_traits>

namespace rdmahd {
namespace {

// A page's bytes by the offset the standard gives them. Upper pages are addressed 128-255.
class Page {
 public:
  Page(std::span<const std::uint8_t> bytes, std::size_t base) : bytes_(bytes), base_(base) {}
  bool Has(std::size_t offset, std::size_t length = 1) const {
    return offset >= base_ && offset - base_ + length <= bytes_.size();
  }
  std::optional<std::uint8_t> U8(std::size_t offset) const {
    if (!Has(offset)) return std::nullopt;
    return bytes_[offset - base_];
  }
  std::optional<std::uint16_t> U16(std::size_t offset) const {
    if (!Has(offset, 2)) return std::nullopt;
    return static_cast<std::uint16_t>((bytes_[offset - base_] << 8) | bytes_[offset - base_ + 1]);
  }
  std::optional<std::int16_t> S16(std::size_t offset) const {
    auto v = U16(offset);
    if (!v) return std::nullopt;
    return static_cast<std::int16_t>(*v);
  }
  std::optional<float> F32(std::size_t offset) const {
    if (!Has(offset, 4)) return std::nullopt;
    const std::uint32_t bits = (std::uint32_t{bytes_[offset - base_]} << 24) |
                               (std::uint32_t{bytes_[offset - base_ + 1]} << 16) |
                               (std::uint32_t{bytes_[offset - base_ + 2]} << 8) | bytes_[offset - base_ + 3];
    float f;
    std::memcpy(&f, &bits, sizeof(f));
    return f;
  }
  bool Bit(std::size_t offset, int bit) const {
    auto v = U8(offset);
    return v && ((*v >> bit) & 1);
  }
  // A fixed-width ASCII field, trailing padding removed (spaces, or NULs some modules use), any
  // other byte outside printable ASCII as '?'.
  std::string Ascii(std::size_t offset, std::size_t length) const {
    if (!Has(offset, length)) return {};
    std::string out;
    for (std::size_t i = 0; i < length; ++i) {
      const std::uint8_t c = bytes_[offset - base_ + i];
      out += c == 0 ? ' ' : ((c >= 0x20 && c < 0x7F) ? static_cast<char>(c) : '?');
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
  }
  std::string Oui(std::size_t offset) const {
    if (!Has(offset, 3)) return {};
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (int i = 0; i < 3; ++i) {
      if (i) out += ':';
      const std::uint8_t c = bytes_[offset - base_ + static_cast<std::size_t>(i)];
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    }
    return out;
  }

 private:
  std::span<const std::uint8_t> bytes_;
  std::size_t base_;
};

Page Lower(std::span<const std::uint8_t> b) { return Page(b, 0); }
Page Upper(std::span<const std::uint8_t> b) { return Page(b, 128); }

double Celsius(std::int16_t raw) { return raw / 256.0; }
double Volts(std::uint16_t raw) { return raw / 10000.0; }
double Milliamps(std::uint16_t raw) { return raw * 0.002; }
double Milliwatts(std::uint16_t raw) { return raw / 10000.0; }

// Four consecutive big-endian thresholds: high alarm, low alarm, high warning, low warning.
template <typename Raw, typename Convert>
std::optional<ModuleThresholds> Thresholds(const Page& p, std::size_t offset, Convert convert) {
  if (!p.Has(offset, 8)) return std::nullopt;
  auto get = [&](std::size_t i) -> double {
    if constexpr (std::is_signed_v<Raw>) {
      return convert(*p.S16(offset + 2 * i));
    } else {
      return convert(*p.U16(offset + 2 * i));
    }
  };
  return ModuleThresholds{get(0), get(1), get(2), get(3)};
}

std::string IdentifierName(std::uint8_t id) {
  switch (id) {
    case 0x03: return "SFP";
    case 0x0C: return "QSFP";
    case 0x0D: return "QSFP+";
    case 0x11: return "QSFP28";
    case 0x18: return "QSFP-DD";
    case 0x19: return "OSFP";
    case 0x1E: return "QSFP+ (CMIS)";
    default: return "unknown";
  }
}

std::optional<ModuleStandard> StandardOf(std::uint8_t id) {
  switch (id) {
    case 0x03: return ModuleStandard::kSff8472;
    case 0x0C: case 0x0D: case 0x11: return ModuleStandard::kSff8636;
    case 0x18: case 0x19: case 0x1E: return ModuleStandard::kCmis;
    default: return std::nullopt;
  }
}

void FinishLane(ModuleLane& lane) {
  if (lane.tx_power_mw) lane.tx_power_dbm = MilliwattsToDbm(*lane.tx_power_mw);
  if (lane.rx_power_mw) lane.rx_power_dbm = MilliwattsToDbm(*lane.rx_power_mw);
  if (lane.tx_bias_ma && lane.tx_power_mw && *lane.tx_bias_ma == 0 && *lane.tx_power_mw == 0) lane.laser_off = true;
}

// ---------------------------------------------------------------------------------------------
// SFF-8472

// External calibration (A0h byte 92 bit 4): value = slope * raw + offset, RX power a polynomial.
struct Sff8472Calibration {
  bool external = false;
  double rx_coeff[5] = {0, 1, 0, 0, 0};  // Rx_PWR(0) .. Rx_PWR(4)
  double bias_slope = 1, bias_offset = 0, txp_slope = 1, txp_offset = 0;
  double temp_slope = 1, temp_offset = 0, volt_slope = 1, volt_offset = 0;
};

Sff8472Calibration ReadCalibration(const Page& a2) {
  Sff8472Calibration c;
  c.external = true;
  for (int i = 0; i < 5; ++i) {  // Rx_PWR(4) at 56 down to Rx_PWR(0) at 72
    if (auto f = a2.F32(56 + 4 * static_cast<std::size_t>(4 - i)); f && std::isfinite(*f)) c.rx_coeff[i] = *f;
  }
  auto slope = [&](std::size_t off) { return a2.U16(off) ? *a2.U16(off) / 256.0 : 1.0; };
  auto offset = [&](std::size_t off) { return a2.S16(off) ? static_cast<double>(*a2.S16(off)) : 0.0; };
  c.bias_slope = slope(76), c.bias_offset = offset(78);
  c.txp_slope = slope(80), c.txp_offset = offset(82);
  c.temp_slope = slope(84), c.temp_offset = offset(86);
  c.volt_slope = slope(88), c.volt_offset = offset(90);
  return c;
}

void DecodeSff8472(const ModuleEepromPages& pages, ModuleDom& out) {
  const Page a0 = Lower(pages.lower);
  out.vendor_name = a0.Ascii(20, 16);
  out.vendor_oui = a0.Oui(37);
  out.vendor_part_number = a0.Ascii(40, 16);
  out.vendor_revision = a0.Ascii(56, 4);
  out.vendor_serial = a0.Ascii(68, 16);
  out.flags_latched = false;
  if (!a0.Bit(92, 6)) {
    out.no_dom_reason = "no digital diagnostics (SFF-8472 A0h byte 92 bit 6 clear)";
    return;
  }
  if (pages.sfp_a2.empty()) {
    out.no_dom_reason = "diagnostics page A2h not read";
    return;
  }
  const Page a2 = Lower(pages.sfp_a2);
  if (!a2.Has(96, 10)) {
    out.no_dom_reason = "diagnostics page A2h too short for its readings";
    return;
  }
  out.has_dom = true;
  out.rx_power_is_average = a0.Bit(92, 3);
  Sff8472Calibration cal;
  if (a0.Bit(92, 4)) cal = ReadCalibration(a2);
  auto temp = [&](std::int16_t raw) { return (cal.temp_slope * raw + cal.temp_offset) / 256.0; };
  auto volt = [&](std::uint16_t raw) { return (cal.volt_slope * raw + cal.volt_offset) / 10000.0; };
  auto bias = [&](std::uint16_t raw) { return (cal.bias_slope * raw + cal.bias_offset) * 0.002; };
  auto txp = [&](std::uint16_t raw) { return (cal.txp_slope * raw + cal.txp_offset) / 10000.0; };
  auto rxp = [&](std::uint16_t raw) {
    double p = 0, x = 1;
    for (double k : cal.rx_coeff) {
      p += k * x;
      x *= raw;
    }
    return p / 10000.0;
  };
  out.temperature_c = temp(*a2.S16(96));
  out.supply_voltage_v = volt(*a2.U16(98));
  // Thresholds and flags both hang on A0h byte 93 bit 7 ("alarm/warning flags implemented"), as
  // ethtool reads it: without it the threshold bytes need not mean anything.
  const bool alarms = a0.Bit(93, 7);
  if (!alarms) {
    out.no_thresholds_reason = "SFF-8472 A0h byte 93 bit 7 clear: the module implements no alarm and warning thresholds";
  } else {
    out.temperature_thresholds_c = Thresholds<std::int16_t>(a2, 0, temp);
    out.voltage_thresholds_v = Thresholds<std::uint16_t>(a2, 8, volt);
    out.tx_bias_thresholds_ma = Thresholds<std::uint16_t>(a2, 16, bias);
    out.tx_power_thresholds_mw = Thresholds<std::uint16_t>(a2, 24, txp);
    out.rx_power_thresholds_mw = Thresholds<std::uint16_t>(a2, 32, rxp);
  }

  ModuleLane lane;
  lane.number = 1;
  lane.tx_bias_ma = bias(*a2.U16(100));
  lane.tx_power_mw = txp(*a2.U16(102));
  lane.rx_power_mw = rxp(*a2.U16(104));
  if (a2.Has(110)) {
    lane.rx_loss_of_signal = a2.Bit(110, 1);
    if (a2.Bit(110, 7) || a2.Bit(110, 6)) lane.laser_off = true;  // TX disable pin or soft disable
  }
  if (alarms && a2.Has(112, 6)) {
    auto flags = [&](int hi_bit, std::size_t alarm_byte) {
      const std::size_t warn_byte = alarm_byte + 4;
      return ModuleFlags{a2.Bit(alarm_byte, hi_bit), a2.Bit(alarm_byte, hi_bit - 1), a2.Bit(warn_byte, hi_bit),
                         a2.Bit(warn_byte, hi_bit - 1)};
    };
    out.temperature_flags = flags(7, 112);
    out.voltage_flags = flags(5, 112);
    lane.tx_bias_flags = flags(3, 112);
    lane.tx_power_flags = flags(1, 112);
    lane.rx_power_flags = flags(7, 113);
  }
  FinishLane(lane);
  out.lanes.push_back(lane);
}

// ---------------------------------------------------------------------------------------------
// SFF-8636

// Latched lane flags: two lanes a byte, high nibble the odd lane (1, 3), bits high alarm, low
// alarm, high warning, low warning from the top.
ModuleFlags LaneNibble(const Page& p, std::size_t first_byte, int lane_index) {
  const std::size_t byte = first_byte + static_cast<std::size_t>(lane_index / 2);
  const int top = lane_index % 2 == 0 ? 7 : 3;
  return ModuleFlags{p.Bit(byte, top), p.Bit(byte, top - 1), p.Bit(byte, top - 2), p.Bit(byte, top - 3)};
}

void DecodeSff8636(const ModuleEepromPages& pages, ModuleDom& out) {
  const Page lower = Lower(pages.lower);
  const Page up0 = Upper(pages.upper00);
  out.vendor_name = up0.Ascii(148, 16);
  out.vendor_oui = up0.Oui(165);
  out.vendor_part_number = up0.Ascii(168, 16);
  out.vendor_revision = up0.Ascii(184, 2);
  out.vendor_serial = up0.Ascii(196, 16);
  out.flags_latched = true;
  if (auto tech = up0.U8(147); tech && (*tech >> 4) >= 0xA) {
    out.no_dom_reason = "copper cable (transmitter technology " + std::to_string(*tech >> 4) +
                        " in SFF-8636 byte 147): no optical diagnostics";
    return;
  }
  const auto temp_raw = lower.U16(22);
  // SFF-8636 has no "diagnostics implemented" bit before rev 2.x; a temperature of 0x0000 or
  // 0xffff is how ethtool, and modules, say there is no reading.
  if (!temp_raw || *temp_raw == 0x0000 || *temp_raw == 0xFFFF) {
    out.no_dom_reason = "no diagnostics (temperature reads " + std::string(temp_raw ? (*temp_raw ? "0xffff" : "0x0000")
                                                                                    : "nothing") + ")";
    return;
  }
  out.has_dom = true;
  if (up0.Has(220)) out.rx_power_is_average = up0.Bit(220, 3);
  out.temperature_c = Celsius(*lower.S16(22));
  if (auto v = lower.U16(26)) out.supply_voltage_v = Volts(*v);
  if (lower.Has(6, 2)) {
    out.temperature_flags = ModuleFlags{lower.Bit(6, 7), lower.Bit(6, 6), lower.Bit(6, 5), lower.Bit(6, 4)};
    out.voltage_flags = ModuleFlags{lower.Bit(7, 7), lower.Bit(7, 6), lower.Bit(7, 5), lower.Bit(7, 4)};
  }
  const bool flat = lower.Bit(2, 2);
  if (flat) {
    out.no_thresholds_reason = "SFF-8636 flat memory (byte 2 bit 2 set): no page 03h, where the thresholds are";
  } else if (pages.upper03.empty()) {
    out.no_thresholds_reason = "SFF-8636 page 03h, where the thresholds are, was not read";
  } else {
    const Page p3 = Upper(pages.upper03);
    out.temperature_thresholds_c = Thresholds<std::int16_t>(p3, 128, Celsius);
    out.voltage_thresholds_v = Thresholds<std::uint16_t>(p3, 144, Volts);
    out.rx_power_thresholds_mw = Thresholds<std::uint16_t>(p3, 176, Milliwatts);
    out.tx_bias_thresholds_ma = Thresholds<std::uint16_t>(p3, 184, Milliamps);
    out.tx_power_thresholds_mw = Thresholds<std::uint16_t>(p3, 192, Milliwatts);
  }
  for (int i = 0; i < 4; ++i) {
    ModuleLane lane;
    lane.number = i + 1;
    const auto at = static_cast<std::size_t>(2 * i);
    if (auto v = lower.U16(34 + at)) lane.rx_power_mw = Milliwatts(*v);
    if (auto v = lower.U16(42 + at)) lane.tx_bias_ma = Milliamps(*v);
    if (auto v = lower.U16(50 + at)) lane.tx_power_mw = Milliwatts(*v);
    if (lower.Has(3)) lane.rx_loss_of_signal = lower.Bit(3, i);
    if (lower.Bit(86, i)) lane.laser_off = true;
    if (lower.Has(9, 6)) {
      lane.rx_power_flags = LaneNibble(lower, 9, i);
      lane.tx_bias_flags = LaneNibble(lower, 11, i);
      lane.tx_power_flags = LaneNibble(lower, 13, i);
    }
    FinishLane(lane);
    out.lanes.push_back(lane);
  }
}

// ---------------------------------------------------------------------------------------------
// CMIS

void DecodeCmis(const ModuleEepromPages& pages, ModuleDom& out) {
  const Page lower = Lower(pages.lower);
  const Page up0 = Upper(pages.upper00);
  out.vendor_name = up0.Ascii(129, 16);
  out.vendor_oui = up0.Oui(145);
  out.vendor_part_number = up0.Ascii(148, 16);
  out.vendor_revision = up0.Ascii(164, 2);
  out.vendor_serial = up0.Ascii(166, 16);
  out.flags_latched = true;
  if (lower.U8(85) == std::uint8_t{0x03}) {
    out.no_dom_reason = "passive copper cable (CMIS media type 0x03): no diagnostics";
    return;
  }
  const bool flat = lower.Bit(2, 7);
  const bool paged = !flat && !pages.upper01.empty();
  const Page p1 = Upper(pages.upper01);
  // Page 01h byte 159 says which module monitors exist; a flat module has no page 01h, and its
  // temperature reads 0 when it has no sensor.
  const auto temp_raw = lower.U16(14);
  const bool temp_monitored =
      paged ? p1.Bit(159, 0) : (temp_raw && *temp_raw != 0x0000 && *temp_raw != 0xFFFF);
  if (!temp_raw || !temp_monitored) {
    out.no_dom_reason = paged ? "no temperature monitor (CMIS page 01h byte 159 bit 0 clear)"
                              : "no diagnostics (flat memory, temperature reads 0)";
    return;
  }
  out.has_dom = true;
  out.temperature_c = Celsius(*lower.S16(14));
  if (auto v = lower.U16(16); v && (!paged || p1.Bit(159, 1))) out.supply_voltage_v = Volts(*v);
  if (lower.Has(9)) {
    out.temperature_flags = ModuleFlags{lower.Bit(9, 0), lower.Bit(9, 1), lower.Bit(9, 2), lower.Bit(9, 3)};
    out.voltage_flags = ModuleFlags{lower.Bit(9, 4), lower.Bit(9, 5), lower.Bit(9, 6), lower.Bit(9, 7)};
  }
  if (!paged) {  // no lanes, no thresholds without pages 01h, 02h, 11h
    out.no_thresholds_reason = flat ? "CMIS flat memory (byte 2 bit 7 set): no page 02h, where the thresholds are"
                                    : "CMIS page 01h (monitors implemented) was not read";
    return;
  }
  const bool bias_mon = p1.Bit(160, 0), txp_mon = p1.Bit(160, 1), rxp_mon = p1.Bit(160, 2);
  const int bias_multiplier = 1 << ((p1.U8(160).value_or(0) >> 3) & 0x3);  // x1, x2, x4
  auto bias = [&](std::uint16_t raw) { return Milliamps(raw) * bias_multiplier; };
  if (pages.upper02.empty()) {
    out.no_thresholds_reason = "CMIS page 02h, where the thresholds are, was not read";
  } else {
    const Page p2 = Upper(pages.upper02);
    out.temperature_thresholds_c = Thresholds<std::int16_t>(p2, 128, Celsius);
    out.voltage_thresholds_v = Thresholds<std::uint16_t>(p2, 136, Volts);
    if (txp_mon) out.tx_power_thresholds_mw = Thresholds<std::uint16_t>(p2, 176, Milliwatts);
    if (bias_mon) out.tx_bias_thresholds_ma = Thresholds<std::uint16_t>(p2, 184, bias);
    if (rxp_mon) out.rx_power_thresholds_mw = Thresholds<std::uint16_t>(p2, 192, Milliwatts);
  }
  if (pages.upper11.empty()) return;
  const Page p11 = Upper(pages.upper11);
  const int lane_count = out.identifier == 0x1E ? 4 : 8;
  for (int i = 0; i < lane_count; ++i) {
    ModuleLane lane;
    lane.number = i + 1;
    const auto at = static_cast<std::size_t>(2 * i);
    if (auto v = p11.U16(154 + at); v && txp_mon) lane.tx_power_mw = Milliwatts(*v);
    if (auto v = p11.U16(170 + at); v && bias_mon) lane.tx_bias_ma = bias(*v);
    if (auto v = p11.U16(186 + at); v && rxp_mon) lane.rx_power_mw = Milliwatts(*v);
    if (p11.Has(147)) lane.rx_loss_of_signal = p11.Bit(147, i);
    auto flags = [&](std::size_t first) {
      return ModuleFlags{p11.Bit(first, i), p11.Bit(first + 1, i), p11.Bit(first + 2, i), p11.Bit(first + 3, i)};
    };
    if (p11.Has(139, 14)) {
      if (txp_mon) lane.tx_power_flags = flags(139);
      if (bias_mon) lane.tx_bias_flags = flags(143);
      if (rxp_mon) lane.rx_power_flags = flags(149);
    }
    FinishLane(lane);
    out.lanes.push_back(lane);
  }
}

// ---------------------------------------------------------------------------------------------
// Checksums (the header lists them): the low 8 bits of the sum of bytes first..last, stored at
// `at`. One over a page that was not read, or is too short to hold it, is not computed.

void AddChecksum(const Page& p, const char* name, const char* label, const char* covers, std::size_t at,
                 std::size_t first, std::size_t last, ModuleDom& out) {
  if (!p.Has(first, last - first + 1) || !p.Has(at)) return;
  unsigned sum = 0;
  for (std::size_t i = first; i <= last; ++i) sum += *p.U8(i);
  ModuleChecksum c;
  c.name = name;
  c.label = label;
  c.covers = covers;
  c.at = at;
  c.first = first;
  c.last = last;
  c.stored = *p.U8(at);
  c.computed = static_cast<std::uint8_t>(sum & 0xFF);
  out.checksums.push_back(std::move(c));
}

void ComputeChecksums(const ModuleEepromPages& pages, ModuleDom& out) {
  switch (out.standard) {
    case ModuleStandard::kSff8472: {
      const Page a0 = Lower(pages.lower);
      AddChecksum(a0, "SFF-8472 A0h CC_BASE", "a0h_cc_base", "identity", 63, 0, 62, out);
      AddChecksum(a0, "SFF-8472 A0h CC_EXT", "a0h_cc_ext", "serial number and diagnostic options", 95, 64, 94, out);
      if (a0.Bit(92, 6)) {
        AddChecksum(Lower(pages.sfp_a2), "SFF-8472 A2h CC_DMI", "a2h_cc_dmi", "thresholds and calibration", 95, 0, 94,
                    out);
      }
      break;
    }
    case ModuleStandard::kSff8636: {
      const Page up0 = Upper(pages.upper00);
      AddChecksum(up0, "SFF-8636 page 00h CC_BASE", "page00h_cc_base", "identity", 191, 128, 190, out);
      AddChecksum(up0, "SFF-8636 page 00h CC_EXT", "page00h_cc_ext", "serial number and monitoring type", 223, 192,
                  222, out);
      break;
    }
    case ModuleStandard::kCmis:
      AddChecksum(Upper(pages.upper00), "CMIS page 00h", "page00h", "identity", 222, 128, 221, out);
      AddChecksum(Upper(pages.upper01), "CMIS page 01h", "page01h", "monitors implemented", 255, 130, 254, out);
      AddChecksum(Upper(pages.upper02), "CMIS page 02h", "page02h", "thresholds", 255, 128, 254, out);
      break;
  }
}

std::string Hex(std::uint8_t v) {
  static constexpr char kHex[] = "0123456789abcdef";
  return std::string("0x") + kHex[v >> 4] + kHex[v & 0xF];
}

}  // namespace

std::optional<double> MilliwattsToDbm(double mw) {
  if (!(mw > 0)) return std::nullopt;
  return 10.0 * std::log10(mw);
}

Result<ModuleDom> DecodeModuleEeprom(const ModuleEepromPages& pages) {
  if (pages.lower.empty()) return Error{"module EEPROM: no lower page to identify the module", EINVAL};
  ModuleDom out;
  out.identifier = pages.lower[0];
  out.identifier_name = IdentifierName(out.identifier);
  const auto standard = StandardOf(out.identifier);
  if (!standard) {
    return Error{"module EEPROM: identifier " + Hex(out.identifier) + " is not SFP, QSFP or CMIS", EINVAL};
  }
  out.standard = *standard;
  // The fields every map needs from the lower page (SFF-8472: identity to byte 95; SFF-8636:
  // readings to byte 86; CMIS: readings and media type to byte 85).
  if (pages.lower.size() < 96 && out.standard == ModuleStandard::kSff8472) {
    return Error{"module EEPROM: SFF-8472 A0h of " + std::to_string(pages.lower.size()) + " bytes, 96 needed", EINVAL};
  }
  if (pages.lower.size() < 87) {
    return Error{"module EEPROM: lower page of " + std::to_string(pages.lower.size()) + " bytes, 87 needed", EINVAL};
  }
  switch (out.standard) {
    case ModuleStandard::kSff8472: DecodeSff8472(pages, out); break;
    case ModuleStandard::kSff8636: DecodeSff8636(pages, out); break;
    case ModuleStandard::kCmis: DecodeCmis(pages, out); break;
  }
  ComputeChecksums(pages, out);
  if (out.has_dom && !out.temperature_thresholds_c && !out.voltage_thresholds_v && !out.tx_bias_thresholds_ma &&
      !out.tx_power_thresholds_mw && !out.rx_power_thresholds_mw && out.no_thresholds_reason.empty()) {
    out.no_thresholds_reason = "its threshold page is too short for them";
  }
  return out;
}

Result<ModuleEepromPages> SplitModuleEepromDump(std::span<const std::uint8_t> dump) {
  if (dump.empty()) return Error{"module EEPROM dump is empty", EINVAL};
  const auto standard = StandardOf(dump[0]);
  if (!standard) return Error{"module EEPROM dump: identifier " + Hex(dump[0]) + " is not SFP, QSFP or CMIS", EINVAL};
  ModuleEepromPages p;
  const std::size_t n = dump.size();
  auto bad_length = [&](const char* expected) {
    return Error{"module EEPROM dump of " + std::to_string(n) + " bytes for identifier " + Hex(dump[0]) + ", expected " +
                     expected,
                 EINVAL};
  };
  switch (*standard) {
    case ModuleStandard::kSff8472:
      if (n != 256 && n != 512) return bad_length("256 or 512");
      p.lower = dump.subspan(0, 128);
      p.upper00 = dump.subspan(128, 128);
      if (n == 512) p.sfp_a2 = dump.subspan(256, 256);
      break;
    case ModuleStandard::kSff8636:
      if (n != 256 && n != 640) return bad_length("256 or 640");
      p.lower = dump.subspan(0, 128);
      p.upper00 = dump.subspan(128, 128);
      if (n == 640) {
        p.upper01 = dump.subspan(256, 128);
        p.upper02 = dump.subspan(384, 128);
        p.upper03 = dump.subspan(512, 128);
      }
      break;
    case ModuleStandard::kCmis:
      if (n != 256) return bad_length("256");
      p.lower = dump.subspan(0, 128);
      p.upper00 = dump.subspan(128, 128);
      break;
  }
  return p;
}

}  // namespace rdmahd
