// optics: the module in each RDMA netdev's cage (facts/module_facts.h), judged against the
// module's own thresholds and flags (SFF-8472, SFF-8636, CMIS: high/low alarm and warning for
// temperature, supply voltage, and per lane TX bias, TX power and RX power).
//   failed   a reading at or beyond an alarm threshold, or an alarm flag set (SFF-8636 and CMIS
//            flags are latched: it happened since the last read).
//   warning  a reading at or beyond a warning threshold, or a warning flag set.
//   ok       every reading inside its warning thresholds, no flag; a copper cable (no optics).
//   unknown  the module was not read, or it has no diagnostics.
// A lane whose transmitter is off is not judged (an unused lane of a breakout, a port shut down).
// Thresholds a module leaves at 0 (high alarm not above low alarm) are not used. The reason names
// the lane, the value and the threshold; the fix names what the quantity points at: low RX power
// a dirty or damaged fiber or connector (or the far end's transmitter), TX bias or power a failing
// laser, temperature the airflow; for low RX power the reason adds the netdev's link state (the
// netdev collector's operstate) when known.
#include <cmath>
#include <cstdio>
#include <optional>

#include "core/check.h"
#include "facts/module_facts.h"
#include "facts/netdev_facts.h"

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

// Judges one reading against its thresholds and flags; appends what is wrong.
void Judge(Quantity q, const std::string& where, const std::optional<double>& value,
           const std::optional<ModuleThresholds>& t, const std::optional<ModuleFlags>& flags, bool latched,
           std::vector<Finding>& out) {
  const std::string what = where + Name(q);
  bool judged = false;
  if (value && t && t->high_alarm > t->low_alarm) {
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
  if (judged || !flags || !flags->Any()) return;
  const std::string since = latched ? " (latched since the last read)" : "";
  const std::string now = value ? ", now " + Show(q, *value) : "";
  if (flags->high_alarm || flags->low_alarm) {
    out.push_back({Verdict::kFailed, q, flags->low_alarm,
                   what + std::string(flags->low_alarm ? " low" : " high") + " alarm flag set" + since + now});
  } else {
    out.push_back({Verdict::kWarning, q, flags->low_warning,
                   what + std::string(flags->low_warning ? " low" : " high") + " warning flag set" + since + now});
  }
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
      return "the module runs hot: check the airflow and fans at the NIC and the cage, blanking panels and the "
             "inlet temperature; a module kept hot ages fast, replace it if the airflow is fine";
    case Quantity::kVoltage:
      return "reseat the module; if its supply stays out of range, replace it, then check the NIC";
  }
  return "";
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
      Judge(Quantity::kTemperature, "", m.temperature_c, m.temperature_thresholds_c, m.temperature_flags,
            m.flags_latched, findings);
      Judge(Quantity::kVoltage, "", m.supply_voltage_v, m.voltage_thresholds_v, m.voltage_flags, m.flags_latched,
            findings);
      std::vector<int> off;
      for (const ModuleLane& lane : m.lanes) {
        if (lane.laser_off) {
          off.push_back(lane.number);
          continue;
        }
        const std::string where = "lane " + std::to_string(lane.number) + " ";
        Judge(Quantity::kRxPower, where, lane.rx_power_mw, m.rx_power_thresholds_mw, lane.rx_power_flags,
              m.flags_latched, findings);
        Judge(Quantity::kTxPower, where, lane.tx_power_mw, m.tx_power_thresholds_mw, lane.tx_power_flags,
              m.flags_latched, findings);
        Judge(Quantity::kTxBias, where, lane.tx_bias_ma, m.tx_bias_thresholds_ma, lane.tx_bias_flags, m.flags_latched,
              findings);
      }
      std::string off_text;
      for (int n : off) off_text += (off_text.empty() ? "" : ", ") + std::to_string(n);
      if (!off_text.empty()) off_text = "; laser off on lane " + off_text + " (not judged)";
      const Finding* worst = nullptr;
      for (const Finding& x : findings) {
        if (worst == nullptr || (x.verdict == Verdict::kFailed && worst->verdict != Verdict::kFailed)) worst = &x;
      }
      if (worst == nullptr) {
        r.verdict = Verdict::kOk;
        r.reason = module + ": every reading inside the module's warning thresholds" +
                   (m.temperature_c ? " (" + Show(Quantity::kTemperature, *m.temperature_c) + ")" : std::string()) +
                   off_text;
      } else {
        r.verdict = worst->verdict;
        r.reason = module + ": " + worst->text;
        std::size_t more = 0;
        for (const Finding& x : findings) {
          if (&x == worst) continue;
          if (more < 2) r.reason += "; " + x.text;
          ++more;
        }
        if (more > 2) r.reason += "; and " + std::to_string(more - 2) + " more";
        r.reason += off_text;
        // Low light on a link that is up is margin running out; on one that is down, often the
        // reason it is down.
        const NetdevFacts* n = netdevs != nullptr ? netdevs->Find(f.netdev) : nullptr;
        if (worst->quantity == Quantity::kRxPower && worst->low && n != nullptr && n->operstate) {
          r.reason += *n->operstate == "up" ? " (the link is up, on a shrinking margin)"
                                            : " (the link is " + *n->operstate + ")";
        }
        r.fix = Fix(*worst, f.netdev);
      }
      out.push_back(std::move(r));
    }
  }
};

}  // namespace

RDMAHD_REGISTER_CHECK("module_health", OpticsCheck,
                      "the module in each RDMA netdev's cage reads inside its own alarm and warning thresholds");

}  // namespace rdmahd
