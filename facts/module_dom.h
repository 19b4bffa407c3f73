// A pluggable module's identity and digital optical monitoring (DOM), as parsers/module_eeprom.h
// decodes it from the pages of its EEPROM (the memory maps, checksums and units are described
// there). Data only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rdmahd {

enum class ModuleStandard { kSff8472, kSff8636, kCmis };

// High/low alarm and warning thresholds of one quantity, in the unit its field names.
struct ModuleThresholds {
  double high_alarm = 0, low_alarm = 0, high_warning = 0, low_warning = 0;
};

// The module's own flags for one quantity. SFF-8636 and CMIS flags are latched (set until read:
// a flag means "happened since the last read"); SFF-8472 flags are the live state.
struct ModuleFlags {
  bool high_alarm = false, low_alarm = false, high_warning = false, low_warning = false;
  bool Any() const { return high_alarm || low_alarm || high_warning || low_warning; }
};

struct ModuleLane {
  int number = 0;  // 1-based, as ethtool prints "Channel N"
  std::optional<double> tx_bias_ma;
  std::optional<double> tx_power_mw;
  std::optional<double> rx_power_mw;
  std::optional<double> tx_power_dbm;  // absent when tx_power_mw is 0
  std::optional<double> rx_power_dbm;  // absent when rx_power_mw is 0
  bool laser_off = false;              // TX disabled, or bias and TX power both 0
  std::optional<bool> rx_loss_of_signal;
  std::optional<ModuleFlags> tx_bias_flags, tx_power_flags, rx_power_flags;
};

// One checksum of the module's memory map, over a page that was read.
struct ModuleChecksum {
  std::string name;      // as the standard names it: "SFF-8472 A2h CC_DMI", "CMIS page 02h"
  std::string label;     // for a metric label: "a2h_cc_dmi", "page02h"
  std::string covers;    // what its bytes hold: "the thresholds and calibration"
  std::size_t at = 0;    // where it is stored (the page's own offset: 63, 191, 222, 255)
  std::size_t first = 0, last = 0;  // the bytes it covers, inclusive
  std::uint8_t stored = 0, computed = 0;
  bool ok() const { return stored == computed; }
};

struct ModuleDom {
  ModuleStandard standard = ModuleStandard::kSff8472;
  std::uint8_t identifier = 0;
  std::string identifier_name;  // "SFP", "QSFP+", "QSFP28", "QSFP-DD", "OSFP", "QSFP+ (CMIS)"
  // Printable ASCII with trailing spaces removed; any other byte shows as '?'. Empty when the page
  // holding it was not given.
  std::string vendor_name, vendor_part_number, vendor_revision, vendor_serial;
  std::string vendor_oui;  // "00:02:c9"

  bool has_dom = false;
  std::string no_dom_reason;  // when !has_dom: why ("passive copper cable", ...)

  std::optional<double> temperature_c;
  std::optional<double> supply_voltage_v;
  std::optional<ModuleThresholds> temperature_thresholds_c, voltage_thresholds_v, tx_bias_thresholds_ma,
      tx_power_thresholds_mw, rx_power_thresholds_mw;
  std::optional<ModuleFlags> temperature_flags, voltage_flags;
  bool flags_latched = false;
  std::optional<bool> rx_power_is_average;  // false: OMA
  std::vector<ModuleLane> lanes;            // empty without DOM
  // When has_dom and the module gives no alarm thresholds at all: why (SFF-8472 without "alarm/
  // warning flags implemented", SFF-8636 or CMIS flat memory, the threshold page not read). Its
  // readings can be reported but not judged.
  std::string no_thresholds_reason;

  std::vector<ModuleChecksum> checksums;  // every checksum over a page that was read, in map order
  // The first checksum that does not match, or null.
  const ModuleChecksum* FailedChecksum() const {
    for (const ModuleChecksum& c : checksums) {
      if (!c.ok()) return &c;
    }
    return nullptr;
  }
};

}  // namespace rdmahd
