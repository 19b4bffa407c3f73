// optics: the module in each RDMA netdev's cage (facts/module_facts.h), judged against the
// module's own thresholds and flags (SFF-8472, SFF-8636, CMIS: high/low alarm and warning for
// temperature, supply voltage, and per lane TX bias, TX power and RX power; RX loss of signal).
//   failed   a reading at or beyond an alarm threshold, or an alarm flag set (SFF-8636 and CMIS
//            flags are latched: it happened since the last read).
//   warning  a reading at or beyond a warning threshold, a warning flag set, or RX loss of signal
//            on a lane whose RX power is not otherwise named.
//   ok       every reading that has thresholds inside its warning thresholds, no flag (readings
//            without thresholds are named as not judged); a copper cable (no optics).
//   unknown  the module was not read, or it has no diagnostics; a checksum of its memory map does
//            not match (parsers/module_eeprom.h: its identity, options and thresholds cannot be
//            trusted, nor readings decoded with them); it gives no thresholds at all and no flag is
//            set (readings reported but not judged, with the decoder's reason).
// A lane whose transmitter is off is not judged (an unused lane of a breakout, a port shut down).
// Thresholds a module leaves at 0 (high alarm not above low alarm) are not used. The reason names
// the lane, the value and the threshold. Several findings are ordered by cause, not by severity:
// the module's own health (temperature, supply voltage) first, then its laser (TX bias, TX power),
// then the light arriving (RX power, which may be the fiber or the far end), so that a TX alarm
// after a high-temperature warning names the temperature first; the verdict is still the worst.
// The fix is the first cause's: low RX power a dirty or damaged fiber or connector (or the far
// end's transmitter), TX bias or power a failing laser, temperature the cooling, the module's
// seating, then the module; for low RX power the reason adds the netdev's link state (the netdev
// collector's operstate) when known.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "core/check.h"
#include "facts/module_facts.h"
#include "facts/netdev_facts.h"
#include "parsers/module_eeprom.h"

namespace rdmahd {
namespace {

enum class Quantity { kTemperature, kVoltage, kTxBias, kTxPower, kRxPower };

struct Finding {
  Verdict verdict = Verdict::kOk;
  Quantity quantity = Quantity::kTemperature;
  bool low = false;
  std::string text;
};

// `v` with `decimals` digits after the point.
std::string Fixed(double v, int decimals) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  return buf;
}

// A value as people read it: optical power in dBm (and mW), the rest in its unit.
std::string Show(Quantity q, double v) {
  switch (q) {
    case Quantity::kTemperature: return Fixed(v, 1) + " C";
    case Quantity::kVoltage: return Fixed(v, 3) + " V";
    case Quantity::kTxBias: return Fixed(v, 2) + " mA";
    case Quantity::kTxPower:
    case Quantity::kRxPower: {
      auto dbm = MilliwattsToDbm(v);
      return dbm ? Fixed(*dbm, 2) + " dBm (" + Fixed(v, 4) + " mW)" : Fixed(v, 4) + " mW";
    }
  }
  return "";
}

const char* Name(Quantity q) {
  switch (q) {
    case Quantity::kTemperature: return "temperature";
    case Quantity::kVoltage: return "supply voltage";
    case Quantity::kTxBias: return "TX bias";
    case Quantity::kTxPower: return "TX power";
    case Quantity::kRxPower: return "RX power";
  }
  return "";
}

// Which cause a quantity points at, in the order a chain of flags is read: the module's own health
// (temperature, supply voltage) first, then its laser (bias, TX power), then the light arriving
// (RX power), which may be the fiber or the far end. A hot module's laser fails next, and a link
// whose laser fails loses its light: the first cause explains the rest.
int CauseRank(Quantity q) {
  switch (q) {
    case Quantity::kTemperature:
    case Quantity::kVoltage: return 0;
    case Quantity::kTxBias:
    case Quantity::kTxPower: return 1;
    case Quantity::kRxPower: return 2;
  }
  return 3;
}

bool Usable(const std::optional<ModuleThresholds>& t) { return t && t->high_alarm > t->low_alarm; }

// Judges one reading against its thresholds and flags; appends what is wrong. Returns whether the
// reading had thresholds to be judged against.
bool Judge(Quantity q, const std::string& where, const std::optional<double>& value,
           const std::optional<ModuleThresholds>& t, const std::optional<ModuleFlags>& flags, bool latched,
           std::vector<Finding>& out) {
  const std::string what = where + Name(q);
  bool judged = false;
  const bool usable = value && Usable(t);
  if (usable) {
    const double v = *value;
    auto add = [&](Verdict verdict, bool low, const char* kind, double limit) {
      out.push_back({verdict, q, low,
                     what + " " + Show(q, v) + (low ? " at or below" : " at or above") + " its " + kind + " " +
                         Show(q, limit)});
      judged = true;
    };
    if (v >= t->high_alarm) add(Verdict::kFailed, false, "high alarm", t->high_alarm);
    else if (v <= t->low_alarm) add(Verdict::kFailed, true, "low alarm", t->low_alarm);
    else if (v >= t->high_warning && t->high_warning > t->low_warning) add(Verdict::kWarning, false, "high warning", t->high_warning);
    else if (v <= t->low_warning && t->high_warning > t->low_warning) add(Verdict::kWarning, true, "low warning", t->low_warning);
  }
  if (judged || !flags || !flags->Any()) return usable;
  const std::string since = latched ? " (latched since the last read)" : "";
  const std::string now = value ? ", now " + Show(q, *value) : "";
  if (flags->high_alarm || flags->low_alarm) {
    out.push_back({Verdict::kFailed, q, flags->low_alarm,
                   what + std::string(flags->low_alarm ? " low" : " high") + " alarm flag set" + since + now});
  } else {
    out.push_back({Verdict::kWarning, q, flags->low_warning,
                   what + std::string(flags->low_warning ? " low" : " high") + " warning flag set" + since + now});
  }
  return usable;
}

std::string Fix(const Finding& f, const std::string& netdev) {
  switch (f.quantity) {
    case Quantity::kRxPower:
      if (f.low)
        return "the light arriving is too weak: clean the fiber connectors at both ends, check the fiber for damage "
               "or tight bends, reseat the optic, and check the far end's TX power (`ethtool -m <far-end netdev>` on "
               "its host); replace the fiber or the optic if it stays low";
      return "the light arriving is too strong: use the fiber type and reach the optic is made for (an attenuator "
             "for a short single-mode link)";
    case Quantity::kTxBias:
    case Quantity::kTxPower:
      return "the optic's laser is failing or out of its range: reseat the optic, then replace it (`ethtool -m " + netdev +
             "` shows its part number)";
    case Quantity::kTemperature:
      if (f.low)
        return "the module reads colder than its low threshold: check the inlet temperature, then reseat the module; "
               "a sensor far below the room's temperature is a failing module: replace it";
      return "the module runs hot: first the cooling (airflow and fans at the NIC and the cage, blanking panels, the "
             "inlet temperature), then reseat the module (one not fully seated misses its cage's heatsink), then "
             "replace it; a module kept hot ages fast";
    case Quantity::kVoltage:
      return "reseat the module; if its supply stays out of range, replace it, then check the NIC";
  }
  return "";
}

std::string Hex(std::uint8_t v) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "0x%02x", v);
  return buf;
}

// A module whose memory map fails a checksum: its identity, options and thresholds cannot be
// trusted, so neither can readings decoded with them (a random dump decodes to -111.8 C).
CheckResult ChecksumMismatch(const ModuleDom& m, const ModuleChecksum& c, const std::string& netdev) {
  CheckResult r{"", netdev, Verdict::kUnknown, "", ""};
  r.reason = c.name + " checksum mismatch on " + netdev + "'s module: stored " + Hex(c.stored) + ", computed " +
             Hex(c.computed) + " over bytes " + std::to_string(c.first) + "-" + std::to_string(c.last) + " (" +
             c.covers + ")";
  std::string others;
  for (const ModuleChecksum& x : m.checksums) {
    if (x.ok() || &x == &c) continue;
    others += (others.empty() ? "" : ", ") + x.name;
  }
  if (!others.empty()) r.reason += "; also " + others;
  r.reason += "; readings not judged";
  r.fix = "read the module again (`ethtool -m " + netdev +
          " hex on`); a mismatch that stays means its EEPROM is corrupt or was programmed wrong: reseat the module, "
          "then replace it";
  return r;
}

class OpticsCheck : public Check {
 public:
  void Evaluate(const Snapshot& snapshot, const Config&, std::vector<CheckResult>& out) const override {
    const auto* facts = snapshot.Get<ModuleEepromFacts>();
    if (facts == nullptr) return;
    const auto* netdevs = snapshot.Get<RdmaNetdevFacts>();
    for (const ModuleNetdevFacts& f : facts->netdevs) {
      CheckResult r{"", f.netdev, Verdict::kUnknown, "", ""};
      if (!f.read) {
        r.reason = f.note;
        out.push_back(std::move(r));
        continue;
      }
      const ModuleDom& m = *f.dom;
      if (const ModuleChecksum* bad = m.FailedChecksum()) {
        out.push_back(ChecksumMismatch(m, *bad, f.netdev));
        continue;
      }
      const std::string module = m.identifier_name + (m.vendor_name.empty() ? "" : " " + m.vendor_name) +
                                 (m.vendor_part_number.empty() ? "" : " " + m.vendor_part_number);
      if (!m.has_dom) {
        if (m.no_dom_reason.find("copper") != std::string::npos) {
          r.verdict = Verdict::kOk;
          r.reason = module + ": " + m.no_dom_reason + ", no optics to monitor";
        } else {
          r.reason = module + ": " + m.no_dom_reason;
        }
        out.push_back(std::move(r));
        continue;
      }
      std::vector<Finding> findings;
      std::vector<const char*> unjudged;  // quantities read without thresholds to judge them by
      bool judged_any = false, any_flags = false;
      auto judge = [&](Quantity q, const std::string& where, const std::optional<double>& value,
                       const std::optional<ModuleThresholds>& t, const std::optional<ModuleFlags>& flags) {
        any_flags |= flags.has_value();
        const bool usable = Judge(q, where, value, t, flags, m.flags_latched, findings);
        judged_any |= usable;
        if (value && !usable && std::find(unjudged.begin(), unjudged.end(), Name(q)) == unjudged.end())
          unjudged.push_back(Name(q));
      };
      judge(Quantity::kTemperature, "", m.temperature_c, m.temperature_thresholds_c, m.temperature_flags);
      judge(Quantity::kVoltage, "", m.supply_voltage_v, m.voltage_thresholds_v, m.voltage_flags);
      std::vector<int> off;
      for (const ModuleLane& lane : m.lanes) {
        if (lane.laser_off) {
          off.push_back(lane.number);
          continue;
        }
        const std::string where = "lane " + std::to_string(lane.number) + " ";
        const std::size_t before = findings.size();
        judge(Quantity::kRxPower, where, lane.rx_power_mw, m.rx_power_thresholds_mw, lane.rx_power_flags);
        if (lane.rx_loss_of_signal.value_or(false)) {
          // Loss of signal: no light the receiver can use. With the RX power already named it adds
          // to that finding; alone (a reading back inside, a latched flag) it is a warning.
          if (findings.size() > before) {
            findings.back().text += ", loss of signal";
          } else {
            findings.push_back({Verdict::kWarning, Quantity::kRxPower, true,
                                where + "RX loss of signal" +
                                    (m.flags_latched ? " (latched since the last read)" : std::string()) +
                                    (lane.rx_power_mw ? ", now " + Show(Quantity::kRxPower, *lane.rx_power_mw) : "")});
          }
        }
        judge(Quantity::kTxPower, where, lane.tx_power_mw, m.tx_power_thresholds_mw, lane.tx_power_flags);
        judge(Quantity::kTxBias, where, lane.tx_bias_ma, m.tx_bias_thresholds_ma, lane.tx_bias_flags);
      }
      std::string off_text;
      for (int n : off) off_text += (off_text.empty() ? "" : ", ") + std::to_string(n);
      if (!off_text.empty()) off_text = "; laser off on lane " + off_text + " (not judged)";
      const std::string temperature =
          m.temperature_c ? " (" + Show(Quantity::kTemperature, *m.temperature_c) + ")" : std::string();
      const std::string no_thresholds =
          m.no_thresholds_reason.empty() ? "its thresholds are all 0 (unusable)" : m.no_thresholds_reason;
      if (findings.empty()) {
        if (!judged_any) {
          // Readings, but nothing to hold them against: reported, not judged.
          r.reason = module + ": readings reported but not judged" + temperature +
                     ": the module gives no thresholds to judge them by (" + no_thresholds + ")" +
                     (any_flags ? "; none of its own alarm or warning flags is set" : "") + off_text;
          r.fix = "`ethtool -m " + f.netdev + "` shows the readings; compare them with the module's datasheet";
        } else {
          r.verdict = Verdict::kOk;
          if (unjudged.empty()) {
            r.reason = module + ": every reading inside the module's warning thresholds" + temperature + off_text;
          } else {
            std::string names;
            for (const char* n : unjudged) names += (names.empty() ? "" : ", ") + std::string(n);
            r.reason = module + ": every reading that has thresholds is inside its warning thresholds" + temperature +
                       "; no thresholds for " + names + " (not judged)" + off_text;
          }
        }
        out.push_back(std::move(r));
        continue;
      }
      // The verdict is the worst finding; the reason and the fix start from the first cause.
      for (const Finding& x : findings) {
        if (x.verdict == Verdict::kFailed) r.verdict = Verdict::kFailed;
      }
      if (r.verdict != Verdict::kFailed) r.verdict = Verdict::kWarning;
      std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
        if (CauseRank(a.quantity) != CauseRank(b.quantity)) return CauseRank(a.quantity) < CauseRank(b.quantity);
        return a.verdict == Verdict::kFailed && b.verdict != Verdict::kFailed;
      });
      const Finding& lead = findings.front();
      // The module's own health can explain its laser and its receiver; a failing laser does not
      // explain the light arriving from the far end, so only a health finding is called a cause.
      const bool chain = CauseRank(lead.quantity) == 0 && CauseRank(findings.back().quantity) > 0;
      r.reason = module + ": " + lead.text + (chain ? ", the first cause to look at; then " : "");
      for (std::size_t i = 1; i < findings.size() && i <= 2; ++i) {
        r.reason += (i == 1 && chain ? "" : "; ") + findings[i].text;
      }
      if (findings.size() > 3) r.reason += "; and " + std::to_string(findings.size() - 3) + " more";
      if (!judged_any) r.reason += "; no thresholds to judge the readings by (" + no_thresholds + ")";
      r.reason += off_text;
      // Low light on a link that is up is margin running out; on one that is down, often the
      // reason it is down.
      const NetdevFacts* n = netdevs != nullptr ? netdevs->Find(f.netdev) : nullptr;
      if (lead.quantity == Quantity::kRxPower && lead.low && n != nullptr && n->operstate) {
        r.reason += *n->operstate == "up" ? " (the link is up, on a shrinking margin)"
                                          : " (the link is " + *n->operstate + ")";
      }
      r.fix = Fix(lead, f.netdev);
      if (chain) {
        r.fix += ". The laser and light findings can follow from it: judge them again once the module is back in "
                 "range";
      }
      out.push_back(std::move(r));
    }
  }
};

}  // namespace

RDMAHD_REGISTER_CHECK("module_health", OpticsCheck,
                      "the module in each RDMA netdev's cage reads inside its own alarm and warning thresholds");

}  // namespace rdmahd
