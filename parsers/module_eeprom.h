// A pluggable module's identity and digital optical monitoring (DOM), decoded from the pages of its
// EEPROM: what `ethtool -m` prints. Three memory maps, chosen by the identifier byte (SFF-8024):
//   SFF-8472 (SFP, SFP+, SFP28; identifier 0x03): A0h (i2c 0x50) bytes 0-127 hold the identity,
//     A2h (i2c 0x51) bytes 0-39 the thresholds, 56-91 the external calibration, 96-105 the
//     readings, 110 the TX disable and LOS state, 112-117 the alarm and warning flags (live, not
//     latched). A2h exists only when A0h byte 92 bit 6 (digital diagnostics) is set; thresholds
//     and flags are read only when A0h byte 93 bit 7 (alarm/warning flags implemented) is, as
//     ethtool does.
//   SFF-8636 (QSFP+, QSFP28; identifiers 0x0C, 0x0D, 0x11): lower page 00h bytes 3-14 the latched
//     flags, 22-27 temperature and supply voltage, 34-57 RX power, TX bias and TX power of lanes
//     1-4, 86 TX disable; upper page 00h the identity (148-219) and monitoring type (220); page 03h
//     (only when byte 2 bit 2, flat memory, is clear) the thresholds at 128-199.
//   CMIS (QSFP-DD 0x18, OSFP 0x19, QSFP+ with CMIS 0x1E): lower page bytes 9 (latched module
//     flags), 14-17 temperature and supply voltage, 85 media type; upper page 00h the identity
//     (129-189); page 01h the monitors implemented (159, 160, with the TX bias multiplier); page 02h
//     the thresholds (128-143, 176-199); page 11h (bank 0) the latched lane flags (135-152) and
//     the lane readings (154-201). Pages exist only when lower page byte 2 bit 7 (flat) is clear.
// Checksums: each map protects its static areas (identity, options, thresholds) with one-byte
// checksums, the low 8 bits of the sum of the bytes they cover. Every one over a page that was
// read is computed and kept (ModuleDom::checksums):
//   SFF-8472 A0h CC_BASE, byte 63 over 0-62 (identity), CC_EXT, byte 95 over 64-94 (serial
//     number, and the options at 92-93 that say whether diagnostics, calibration and alarms
//     exist); A2h CC_DMI, byte 95 over 0-94 (thresholds and external calibration constants).
//     The Linux SFP driver (drivers/net/phy/sfp.c, sfp_sm_mod_probe) refuses a module whose
//     CC_BASE fails ("EEPROM base structure checksum failure") and zeroes the extended area of one
//     whose CC_EXT fails, except COTSWORKS modules, which ship with wrong checksums. A2h CC_DMI is
//     computed only when A0h byte 92 bit 6 says the module has diagnostics (A2h exists).
//   SFF-8636 upper page 00h CC_BASE, byte 191 over 128-190 (identity), CC_EXT, byte 223 over
//     192-222 (serial number, diagnostic monitoring type at 220). Page 03h (thresholds) has no
//     checksum in SFF-8636.
//   CMIS page 00h, byte 222 over 128-221 (identity); page 01h, byte 255 over 130-254 (the monitors
//     implemented; bytes 128-129, the inactive firmware revision, are left out so that a firmware
//     update does not change the page); page 02h, byte 255 over 128-254 (thresholds). CMIS 4.0 and
//     5.x, section 8: "Page Checksum over bytes 128-221" (page 00h), "bytes 130-254" (page 01h),
//     "bytes 128-254" (page 02h); modules' production test tools check the same three.
// The lower pages and A2h 96-127 hold live readings and flags and have no checksum. The decoder
// still decodes a module whose checksum fails (the fields are there for a test and a fuzzer to
// see) but says so: FailedChecksum() is the first mismatch, and a consumer must not present its
// fields as valid (the optics check judges it unknown, the collector exports none of them).
//
// Units, as the standards define them: temperature s16 in 1/256 C, voltage u16 in 100 uV, bias u16
// in 2 uA (CMIS: times the advertised multiplier), optical power u16 in 0.1 uW; all big-endian.
//
// What is not a number is said, not printed as one: a module without diagnostics (a passive DAC,
// or a module whose monitoring is not implemented) has has_dom false, a reason, and no
// temperature (ethtool prints 0.00 C for it); an optical power of 0 mW has no dBm (ethtool prints
// -inf); a lane whose transmitter is disabled, or whose bias and TX power both read 0, has
// laser_off set.
//
// The decoded module (ModuleDom) is data the facts hold: facts/module_dom.h.
//
// Pure decoder: the caller reads the pages (ETHTOOL_MSG_MODULE_EEPROM_GET, or the
// ETHTOOL_GMODULEEEPROM ioctl whose flat dump SplitModuleEepromDump cuts into pages) and hands them
// over. Every offset read is checked against the page's length; a page too short for a field
// leaves that field absent rather than reading past it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "facts/module_dom.h"

namespace rdmahd {

// The pages of one module. Each span may be empty (not read, or not present). Upper pages hold
// their bytes 128-255 (128 bytes); `lower` bytes 0-127; `sfp_a2` A2h bytes 0-255 (0-127 suffice).
struct ModuleEepromPages {
  std::span<const std::uint8_t> lower;    // SFF-8472: A0h 0-127
  std::span<const std::uint8_t> upper00;  // page 00h 128-255 (SFF-8472: A0h 128-255, unused)
  std::span<const std::uint8_t> sfp_a2;   // SFF-8472 only
  std::span<const std::uint8_t> upper01;  // CMIS advertising
  std::span<const std::uint8_t> upper02;  // CMIS thresholds
  std::span<const std::uint8_t> upper03;  // SFF-8636 thresholds
  std::span<const std::uint8_t> upper11;  // CMIS lane status, bank 0
};

// Decodes the pages. An error (EINVAL) only when the module cannot be identified: `lower` shorter
// than the identity fields of its map, or an identifier none of the three maps covers (the error
// gives it in hex). Everything else that is missing is absent in the result.
Result<ModuleDom> DecodeModuleEeprom(const ModuleEepromPages& pages);

// Cuts a flat ETHTOOL_GMODULEEEPROM dump (`ethtool -m DEV raw on`) into pages by its length and
// identifier: 256 bytes A0h and 256 bytes A2h for SFF-8472 (512); lower page 00h, upper page 00h,
// then upper pages 01h, 02h, 03h for SFF-8636 (256 or 640); lower page and upper page 00h for
// CMIS (256: the ioctl reaches no other page). The spans point into `dump`. EINVAL for another
// length, or an identifier that does not go with it.
Result<ModuleEepromPages> SplitModuleEepromDump(std::span<const std::uint8_t> dump);

// 10 * log10(mw); absent for 0 or less (ethtool prints -inf).
std::optional<double> MilliwattsToDbm(double mw);

}  // namespace rdmahd
