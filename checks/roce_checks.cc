// RoCE lossless-fabric checks: PFC on the RoCE priority (and only there), no global pause next to
// PFC, trust mode and DSCP mapping, ECN for both DCQCN roles, MTU, pause storms. Facts come from
// the "netdev" and "roce" collectors (collectors/netdev_collector.h, collectors/roce_qos.h); the
// policy from config.roce. Each verdict's subject is the netdev name.
#include <cmath>
#include <sstream>

#include "common/duration_text.h"
#include "common/parse.h"
#include "config/config_section.h"
#include "core/check.h"
#include "facts/netdev_facts.h"
#include "facts/roce_facts.h"

namespace rdmahd {
namespace {

// A paused share of wall time above this between two collections is a warning: short pauses are
// PFC doing its job, sustained ones mean a congested or stuck receiver somewhere downstream.
constexpr double kPausedShareWarn = 0.01;
// The shortest span between two collections a paused share is judged over: 1% of 2 s is 20 ms, one
// burst of PFC doing its job, not sustained pause.
constexpr double kMinPausedShareSeconds = 10;

std::string PriorityList(std::uint8_t mask) {
  std::string out;
  for (int p = 0; p < kDcbPriorities; ++p) {
    if (!((mask >> p) & 1)) continue;
    if (!out.empty()) out += ',';
    out += std::to_string(p);
  }
  return out.empty() ? "none" : out;
}

// The PFC config of a netdev, or why it is unknown.
const PfcConfig* KnownPfc(const RoceNetdevFacts& f, std::string& why) {
  if (!f.dcb) {
    why = "DCB state unknown: " + f.dcb_note;
    return nullptr;
  }
  if (!f.dcb->supported) {
    why = "the driver has no DCB support (EOPNOTSUPP), so PFC cannot be read; PFC state unknown";
    return nullptr;
  }
  if (!f.dcb->pfc) {
    why = "the DCB answer carries no IEEE PFC configuration; PFC state unknown";
    return nullptr;
  }
  return &*f.dcb->pfc;
}

constexpr std::string_view kNotConfiguredPriority = "not configured (roce.priority)";
constexpr std::string_view kSetPriority = "set roce.priority in the config file";

// One verdict about one netdev; the subject is added by EvaluateEach (the check name by the engine).
struct Outcome {
  Verdict verdict;
  std::string reason;
  std::string fix = "";
};

// Every check here judges each netdev behind an RDMA port on its own: `judge(netdev facts)` once
// per netdev of `facts`, after the common gate "is the RoCE priority configured?" when the check
// needs it.
template <class Facts, class Judge>
void EvaluateEach(const Facts* facts, bool needs_priority, const Config& config,
                  std::vector<CheckResult>& out, Judge judge) {
  if (facts == nullptr) return;
  for (const auto& f : facts->netdevs) {
    Outcome o = needs_priority && !config.Section<RocePolicy>().priority
                    ? Outcome{Verdict::kUnknown, std::string(kNotConfiguredPriority), std::string(kSetPriority)}
                    : judge(f);
    out.push_back(CheckResult{"", f.netdev, o.verdict, std::move(o.reason), std::move(o.fix)});
  }
}

// ---------------------------------------------------------------------------------------------------
class PfcOnRocePriorityCheck : public Check {
 public:
  void Evaluate(const Snapshot& snapshot, const Config& config, std::vector<CheckResult>& out) const override {
    EvaluateEach(snapshot.Get<RoceQosFacts>(), true, config, out, [&](const RoceNetdevFacts& f) {
      const int prio = *config.Section<RocePolicy>().priority;
      std::string why;
      const PfcConfig* pfc = KnownPfc(f, why);
      if (pfc == nullptr) return Outcome{Verdict::kUnknown, why};
      const std::string enabled = " (enabled: " + PriorityList(pfc->enabled_mask) + ")";
      if (pfc->Enabled(prio)) {
        return Outcome{Verdict::kOk, "PFC enabled on RoCE priority " + std::to_string(prio) + enabled};
      }
      return Outcome{Verdict::kFailed,
                     "PFC is off on RoCE priority " + std::to_string(prio) + enabled +
                         ": RoCE traffic is not lossless and drops turn into retransmission timeouts",
                     "dcb pfc set dev " + f.netdev + " prio-pfc " + std::to_string(prio) + ":on"};
    });
  }
};

class PfcOtherPrioritiesCheck : public Check {
 public:
  void Evaluate(const Snapshot& snapshot, const Config& config, std::vector<CheckResult>& out) const override {
    EvaluateEach(snapshot.Get<RoceQosFacts>(), true, config, out, [&](const RoceNetdevFacts& f) {
      const int prio = *config.Section<RocePolicy>().priority;
      std::string why;
      const PfcConfig* pfc = KnownPfc(f, why);
      if (pfc == nullptr) return Outcome{Verdict::kUnknown, why};
      const std::uint8_t others = pfc->enabled_mask & static_cast<std::uint8_t>(~(1u << prio));
      if (others == 0) return Outcome{Verdict::kOk, "no PFC on priorities other than " + std::to_string(prio)};
      std::string off;
      for (int p = 0; p < kDcbPriorities; ++p) {
        if (!((others >> p) & 1)) continue;
        off += ' ';
        off += std::to_string(p);
        off += ":off";
      }
      return Outcome{Verdict::kWarning,
                     "PFC also enabled on priorities " + PriorityList(others) + " besides RoCE priority " +
                         std::to_string(prio) +
                         ": pauses there can spread congestion (head-of-line blocking, deadlock risk)",
                     "dcb pfc set dev " + f.netdev + " prio-pfc" + off};
    });
  }
};

class GlobalPauseWithPfcCheck : public Check {
 public:
  void Evaluate(const Snapshot& snapshot, const Config& config, std::vector<CheckResult>& out) const override {
    const auto* netdevs = snapshot.Get<RdmaNetdevFacts>();
    if (netdevs == nullptr) return;
    EvaluateEach(snapshot.Get<RoceQosFacts>(), false, config, out, [&](const RoceNetdevFacts& f) {
      const NetdevFacts* nd = netdevs->Find(f.netdev);
      if (nd == nullptr || !nd->global_pause) {
        return Outcome{Verdict::kUnknown, "global pause state unknown: " +
                                              (nd ? nd->global_pause_note : std::string("netdev not collected"))};
      }
      const PauseParam& gp = *nd->global_pause;
      std::string state = std::string("rx ") + (gp.rx ? "on" : "off") + ", tx " + (gp.tx ? "on" : "off");
      if (!gp.rx && !gp.tx) return Outcome{Verdict::kOk, "global pause off (" + state + ")"};
      std::string why;
      const PfcConfig* pfc = KnownPfc(f, why);
      if (pfc == nullptr) return Outcome{Verdict::kUnknown, "global pause " + state + "; " + why};
      if (pfc->enabled_mask == 0) {
        return Outcome{Verdict::kOk, "global pause " + state + " and no PFC: link-level pause is the flow control"};
      }
      return Outcome{Verdict::kFailed,
                     "global pause " + state + " together with PFC on priorities " +
                         PriorityList(pfc->enabled_mask) + ": link-level pause stops every priority and defeats PFC",
                     "ethtool -A " + f.netdev + " rx off tx off"};
    });
  }
};

class TrustCheck : public Check {
 public:
  void Evaluate(const Snapshot& snapshot, const Config& config, std::vector<CheckResult>& out) const override {
    const RocePolicy& pol = config.Section<RocePolicy>();
    // A DSCP in the policy implies DSCP trust when the trust mode itself is not given.
    const bool configured = pol.trust.has_value() || pol.dscp.has_value();
    const TrustMode want = pol.trust.value_or(TrustMode::kDscp);
    const std::string dscp = pol.dscp ? std::to_string(*pol.dscp) : "";
    const std::string prio = pol.priority ? std::to_string(*pol.priority) : "";
    EvaluateEach(snapshot.Get<RoceQosFacts>(), false, config, out, [&](const RoceNetdevFacts& f) {
      if (!configured) {
        return Outcome{Verdict::kUnknown, "not configured (roce.trust)",
                       "set roce.trust (and roce.dscp) in the config file"};
      }
      if (!f.trust) {
        return Outcome{Verdict::kUnknown, f.dcb ? std::string("trust mode unknown: the driver reports no DCB APP table")
                                                : "trust mode unknown: " + f.dcb_note};
      }
      if (want == TrustMode::kPcp) {
        if (*f.trust == TrustMode::kPcp) return Outcome{Verdict::kOk, "trust pcp as configured"};
        return Outcome{Verdict::kFailed, "trust is dscp (DSCP entries in the APP table), policy says pcp",
                       "dcb app flush dev " + f.netdev + " dscp-prio"};
      }
      // DSCP trust wanted.
      if (*f.trust != TrustMode::kDscp) {
        return Outcome{Verdict::kFailed,
                       "trust is pcp (no DSCP entries in the APP table), policy says dscp: RoCE packets land on "
                       "the priority of their VLAN PCP, not on the lossless one",
                       pol.dscp && pol.priority ? "dcb app add dev " + f.netdev + " dscp-prio " + dscp + ":" + prio
                                                : "dcb app add dev " + f.netdev + " dscp-prio DSCP:PRIO"};
      }
      if (!pol.dscp || !pol.priority) {
        return Outcome{Verdict::kOk,
                       "trust dscp as configured (mapping not checked: roce.dscp/roce.priority not configured)"};
      }
      auto it = f.dscp_priority.find(*pol.dscp);
      if (it != f.dscp_priority.end() && it->second == *pol.priority) {
        return Outcome{Verdict::kOk, "trust dscp, DSCP " + dscp + " -> priority " + prio};
      }
      if (it == f.dscp_priority.end()) {
        return Outcome{Verdict::kFailed,
                       "trust dscp but DSCP " + dscp + " is not mapped (it falls to the default priority), "
                       "RoCE priority is " + prio,
                       "dcb app add dev " + f.netdev + " dscp-prio " + dscp + ":" + prio};
      }
      return Outcome{Verdict::kFailed,
                     "trust dscp but DSCP " + dscp + " maps to priority " + std::to_string(it->second) +
                         ", RoCE priority is " + prio,
                     "dcb app replace dev " + f.netdev + " dscp-prio " + dscp + ":" + prio};
    });
  }
};

class EcnCheck : public Check {
 public:
  void Evaluate(const Snapshot& snapshot, const Config& config, std::vector<CheckResult>& out) const override {
    EvaluateEach(snapshot.Get<RoceQosFacts>(), true, config, out, [&](const RoceNetdevFacts& f) {
      if (!config.Section<RocePolicy>().require_ecn) {
        return Outcome{Verdict::kOk, "ECN not required by policy (roce.require_ecn: false)"};
      }
      const int prio = *config.Section<RocePolicy>().priority;
      const std::string p = std::to_string(prio);
      std::string off_roles, missing, fix;
      for (const auto& [role, facts] : {std::pair{"roce_np", &f.ecn_np}, std::pair{"roce_rp", &f.ecn_rp}}) {
        const std::string path = "/sys/class/net/" + f.netdev + "/ecn/" + role + "/enable/" + p;
        if (!facts->enabled[prio]) {
          if (missing.empty()) missing = path;
        } else if (!*facts->enabled[prio]) {
          off_roles += off_roles.empty() ? role : std::string(" and ") + role;
          fix += (fix.empty() ? "echo 1 > " : " && echo 1 > ") + path;
        }
      }
      if (!off_roles.empty()) {
        return Outcome{Verdict::kFailed,
                       "ECN off on priority " + p + " for " + off_roles +
                           ": without DCQCN congestion is handled by PFC alone (pause spreading)",
                       fix};
      }
      if (!missing.empty()) {
        return Outcome{Verdict::kUnknown,
                       "no " + missing + " (per-priority ECN enables exist only with MLNX_OFED/DOCA drivers)"};
      }
      return Outcome{Verdict::kOk, "ECN enabled on priority " + p + " for roce_np and roce_rp"};
    });
  }
};

class MtuCheck : public Check {
 public:
  void Evaluate(const Snapshot& snapshot, const Config& config, std::vector<CheckResult>& out) const override {
    EvaluateEach(snapshot.Get<RdmaNetdevFacts>(), false, config, out, [&](const NetdevFacts& f) {
      if (!config.Section<RocePolicy>().min_mtu) {
        return Outcome{Verdict::kUnknown, "not configured (roce.min_mtu)", "set roce.min_mtu in the config file"};
      }
      const std::string want = std::to_string(*config.Section<RocePolicy>().min_mtu);
      if (!f.mtu) return Outcome{Verdict::kUnknown, "MTU unknown (/sys/class/net/" + f.netdev + "/mtu unreadable)"};
      if (*f.mtu < *config.Section<RocePolicy>().min_mtu) {
        return Outcome{Verdict::kFailed,
                       "MTU " + std::to_string(*f.mtu) + " below the required " + want +
                           ": RoCE falls back to a smaller path MTU (4096-byte RoCE MTU needs 4200)",
                       "ip link set dev " + f.netdev + " mtu " + want};
      }
      return Outcome{Verdict::kOk, "MTU " + std::to_string(*f.mtu) + " >= " + want};
    });
  }
};

// Growth of the pause counters between the last two collections comes from the history: the
// totals of each netdev are recorded once per collection (a total that went down, a driver reload,
// starts a new baseline: the next growth is known one collection later).
class PauseStormCheck : public Check {
 public:
  void Record(const Snapshot& snapshot, const Config&, History& history, History::TimePoint now) const override {
    const auto* facts = snapshot.Get<RdmaNetdevFacts>();
    if (facts == nullptr) return;
    for (const NetdevFacts& f : facts->netdevs) {
      if (f.storm_events_total) history.RecordCounter(StormSeries(f), 0, *f.storm_events_total, now);
      if (f.rx_paused_seconds_total) history.RecordCounter(PausedSeries(f), 0, PausedNanoseconds(f), now);
    }
  }

  void EvaluateOverTime(const CheckContext& ctx, std::vector<CheckResult>& out) const override {
    EvaluateEach(ctx.snapshot.Get<RdmaNetdevFacts>(), false, ctx.config, out, [&](const NetdevFacts& f) {
      if (!f.stats_read) return Outcome{Verdict::kUnknown, "driver statistics unknown: " + f.stats_note};
      if (!f.storm_events_total && !f.rx_paused_seconds_total) {
        return Outcome{Verdict::kUnknown, "the driver exposes no pause-storm or pause-duration counters"};
      }
      // Growth between the last two collections, where both saw the total in the same baseline.
      History::Growth storm, paused;
      const bool have_storm = f.storm_events_total && Step(ctx.history, StormSeries(f), storm);
      const bool have_paused = f.rx_paused_seconds_total && Step(ctx.history, PausedSeries(f), paused);
      std::ostringstream reason;
      bool warn = false;
      std::string too_short;  // "needs 10 s between collections, has 2 s" when pause came in less
      if (have_storm || have_paused) {
        if (have_storm && storm.increase > 0) {
          warn = true;
          reason << storm.increase << " pause-storm events in the last " << FormatSeconds(storm.seconds);
        }
        if (have_paused && paused.seconds > 0 && paused.increase > 0 && paused.seconds < kMinPausedShareSeconds) {
          too_short = "the paused share needs " + FormatSeconds(kMinPausedShareSeconds) +
                      " between collections, has " + FormatSeconds(paused.seconds);
        } else if (have_paused && paused.seconds > 0) {
          double share = static_cast<double>(paused.increase) / 1e9 / paused.seconds;
          if (share > kPausedShareWarn) {
            if (warn) reason << "; ";
            warn = true;
            reason << "paused " << static_cast<int>(share * 100 + 0.5) << "% of the last "
                   << FormatSeconds(paused.seconds);
          }
        }
        if (!warn && !too_short.empty()) {
          return Outcome{Verdict::kUnknown, "paused " + std::to_string(paused.increase / 1'000'000) + " ms in the last " +
                                                FormatSeconds(paused.seconds) + "; " + too_short};
        }
        if (!warn) {
          const double span = have_paused ? paused.seconds : storm.seconds;
          reason << "no pause-storm events and pause below 1% in the last " << FormatSeconds(span);
        }
      } else if (f.storm_events_total && *f.storm_events_total > 0) {
        // First collection (or the first after a reset): only totals since the driver loaded are known.
        warn = true;
        reason << *f.storm_events_total << " pause-storm events since the driver loaded";
      } else {
        reason << "no pause-storm events since the driver loaded (pause growth needs two collections)";
      }
      if (!warn) return Outcome{Verdict::kOk, reason.str()};
      return Outcome{Verdict::kWarning, reason.str(),
                     "find the receiver that cannot drain: check rdma_pause_frames_total{direction=\"tx\"} on the "
                     "peers and the switch's PFC watchdog; ethtool -S " + f.netdev};
    });
  }

 private:
  static bool Step(const History& history, const std::string& series, History::Growth& out) {
    const std::optional<History::Growth> g = history.LastStep(series);
    if (g) out = *g;
    return g.has_value();
  }
  static std::string StormSeries(const NetdevFacts& f) { return "roce_pause_storm/" + f.netdev + "/storm_events"; }
  static std::string PausedSeries(const NetdevFacts& f) { return "roce_pause_storm/" + f.netdev + "/rx_paused_ns"; }
  // The paused time in whole nanoseconds: counters are whole numbers (584 years fit).
  static std::uint64_t PausedNanoseconds(const NetdevFacts& f) {
    const double ns = *f.rx_paused_seconds_total * 1e9;
    return ns >= 1.8e19 ? std::uint64_t{0} : static_cast<std::uint64_t>(std::llround(ns));
  }
};

RDMAHD_REGISTER_CHECK("roce_pfc_priority", PfcOnRocePriorityCheck,
                      "PFC is enabled on the RoCE priority");
RDMAHD_REGISTER_CHECK("roce_pfc_other_priorities", PfcOtherPrioritiesCheck,
                      "PFC is enabled on no priority besides the RoCE one");
RDMAHD_REGISTER_CHECK("roce_global_pause", GlobalPauseWithPfcCheck,
                      "link-level pause is off where PFC is on");
RDMAHD_REGISTER_CHECK("roce_trust", TrustCheck,
                      "trust mode as policy and the RoCE DSCP mapped to the RoCE priority");
RDMAHD_REGISTER_CHECK("roce_ecn", EcnCheck,
                      "ECN (DCQCN) enabled for both roles on the RoCE priority");
RDMAHD_REGISTER_CHECK("roce_mtu", MtuCheck,
                      "netdev MTU at least roce.min_mtu");
RDMAHD_REGISTER_CHECK("roce_pause_storm", PauseStormCheck,
                      "no pause storms and no sustained pause");

// 1280 is the IPv6 minimum link MTU (nothing running RoCE at a 1024-byte RoCE MTU has less); 9978
// is the largest netdev max_mtu among supported NICs (mlx5). Typo guards rather than physics.
constexpr int kMinMtuLowest = 1280;
constexpr int kMinMtuHighest = 9978;

// A TOS byte (DSCP << 2, what `tc`/`cma_roce_tos` take) is the usual slip.
Status ReadDscp(const ConfigWalker& w, const ConfigNode& v, std::optional<int>& out) {
  std::string hint;
  if (v.node.IsScalar()) {
    if (auto n = ParseI64(v.node.Scalar()); n && *n > 63 && *n <= 255 && *n % 4 == 0) {
      hint = " (that looks like a TOS byte; the DSCP is TOS / 4 = " + std::to_string(*n / 4) + ")";
    }
  }
  return w.ReadInt(v, 0, 63, out, hint);
}

Status ReadTrust(const ConfigWalker& w, const ConfigNode& v, std::optional<TrustMode>& out) {
  if (v.node.IsNull()) return Status::Ok();
  std::string text = v.node.IsScalar() ? v.node.Scalar() : "";
  if (text == "dscp") {
    out = TrustMode::kDscp;
  } else if (text == "pcp") {
    out = TrustMode::kPcp;
  } else {
    std::string message = "must be \"dscp\" or \"pcp\", got " + ConfigWalker::Describe(v.node);
    if (auto suggestion = ConfigWalker::ClosestKey(text, {"dscp", "pcp"}); suggestion && !text.empty()) {
      message += " (did you mean " + ConfigWalker::Quote(*suggestion) + "?)";
    }
    return w.FailAt(v, message);
  }
  return Status::Ok();
}

// roce: these checks' policy; the roce_tos check (host_dev_checks.cc) and the netdev collector's
// extra_ethtool_stats (collectors/netdev_collector.cc) read it too.
RDMAHD_REGISTER_CONFIG_SECTION(RocePolicy, "roce", 40,
    {{"roce.priority", "unset"}, {"roce.dscp", "unset"}, {"roce.trust", "unset"}, {"roce.require_ecn", "`true`"},
     {"roce.min_mtu", "unset"}, {"roce.extra_ethtool_stats", "`[]`"}},
    [](const ConfigWalker& w, const ConfigNode& v, RocePolicy& out) {
      return w.VisitMap(v, {
          {"priority", [&](const ConfigNode& f) { return w.ReadInt(f, 0, 7, out.priority); }},
          {"dscp", [&](const ConfigNode& f) { return ReadDscp(w, f, out.dscp); }},
          {"trust", [&](const ConfigNode& f) { return ReadTrust(w, f, out.trust); }},
          {"require_ecn", [&](const ConfigNode& f) { return w.ReadBool(f, out.require_ecn); }},
          {"min_mtu", [&](const ConfigNode& f) { return w.ReadInt(f, kMinMtuLowest, kMinMtuHighest, out.min_mtu); }},
          {"extra_ethtool_stats", [&](const ConfigNode& f) { return w.ReadRegexList(f, out.extra_ethtool_stats); }},
      });
    });

}  // namespace
}  // namespace rdmahd
