// fec: forward error correction of each Ethernet netdev behind an RDMA port (facts/fec_facts.h),
// over the engine's history, with the link speed of the netdev collector (facts/netdev_facts.h).
//   failed   uncorrectable FEC blocks counted within the last hour: frames were lost on the wire.
//   warning  the pre-FEC bit error ratio over the last hour above host.fec.pre_fec_ber_warning:
//            the link still delivers every frame, but it is close to what its FEC can correct (a
//            dirty connector, a failing optic), and it will flap or drop frames next. The ratio
//            comes from corrected bits where the driver counts them; otherwise corrected blocks
//            give a lower bound (each corrected block held at least one wrong bit). A ratio is a
//            sustained rate: it is judged from kMinBerSeconds of samples; over a shorter span, corrected
//            errors are `unknown` (needs 60 s of samples, has 10 s), none at all a ratio of 0.
//   warning  FEC off on a link of 100 Gb/s or more: every IEEE 802.3 PHY at that speed (100GBASE-
//            SR4/CR4/KR4 with Clause 91 RS(528,514), 50 Gb/s-per-lane PAM4 with RS(544,514))
//            needs RS-FEC, so without it the link errors or fails to come up.
//   ok       none of these.
// With one collection only (`rdma-healthd check`) no increase is known: uncorrectable blocks
// counted so far are a `warning` (when they came is unknown), corrected ones `unknown` (their rate
// needs a second collection).
#include <chrono>
#include <cstdio>
#include <optional>

#include "common/duration_text.h"
#include "config/config_section.h"
#include "core/check.h"
#include "facts/fec_facts.h"
#include "facts/netdev_facts.h"
#include "parsers/ethtool_fec.h"

namespace rdmahd {
namespace {

struct FecPolicy {
  double pre_fec_ber_warning = 1e-5;
};

constexpr auto kWindow = std::chrono::hours(1);
constexpr std::int64_t kRsRequiredMbps = 100000;
// The shortest span a pre-FEC bit error ratio is judged from: a burst of corrected bits in a few
// seconds (a cable touched, the link training) is not the link's sustained error ratio.
constexpr double kMinBerSeconds = 60;

std::string Series(const FecNetdevFacts& f, const char* what) { return "fec/" + f.netdev + "/" + what; }

std::string Sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1e", v);
  return buf;
}

std::string FixOptics(const std::string& netdev) {
  return "clean the fiber connectors at both ends, reseat or replace the optic or cable (`ethtool -m " + netdev +
         "` shows its power levels), and check the far end's port; `ethtool -I --show-fec " + netdev +
         "` shows the counters";
}

class FecCheck : public Check {
 public:
  void Record(const Snapshot& snapshot, const Config&, History& history, History::TimePoint now) const override {
    const auto* facts = snapshot.Get<FecFacts>();
    if (facts == nullptr) return;
    for (const FecNetdevFacts& f : facts->netdevs) {
      if (!f.read) continue;
      const std::uint64_t instance = f.fec.ifindex;  // a re-created netdev counts anew
      if (f.fec.uncorrectable_blocks.total)
        history.RecordCounter(Series(f, "uncorrectable_blocks"), instance, *f.fec.uncorrectable_blocks.total, now);
      if (f.fec.corrected_blocks.total)
        history.RecordCounter(Series(f, "corrected_blocks"), instance, *f.fec.corrected_blocks.total, now);
      if (f.fec.corrected_bits.total)
        history.RecordCounter(Series(f, "corrected_bits"), instance, *f.fec.corrected_bits.total, now);
    }
  }

  void EvaluateOverTime(const CheckContext& ctx, std::vector<CheckResult>& out) const override {
    const auto* facts = ctx.snapshot.Get<FecFacts>();
    if (facts == nullptr) return;
    const auto* netdevs = ctx.snapshot.Get<RdmaNetdevFacts>();
    const FecPolicy& policy = ctx.config.Section<FecPolicy>();
    for (const FecNetdevFacts& f : facts->netdevs) {
      CheckResult r{"", f.netdev, Verdict::kUnknown, "", ""};
      if (!f.read) {
        r.reason = f.Note();
        out.push_back(std::move(r));
        continue;
      }
      std::optional<std::int64_t> speed_mbps;
      if (netdevs != nullptr) {
        if (const NetdevFacts* n = netdevs->Find(f.netdev); n != nullptr) speed_mbps = n->speed_mbps;
      }
      const std::string mode = f.fec.active ? std::string(FecModeName(*f.fec.active)) : "not reported";
      const auto uncorr = ctx.history.Increase(Series(f, "uncorrectable_blocks"), kWindow, ctx.now);
      const auto bits = ctx.history.Increase(Series(f, "corrected_bits"), kWindow, ctx.now);
      const auto blocks = ctx.history.Increase(Series(f, "corrected_blocks"), kWindow, ctx.now);
      std::optional<double> ber;
      std::string ber_from;
      std::string too_short;  // "needs 60 s of samples, has 10 s" when corrected errors came in less
      if (speed_mbps && *speed_mbps > 0) {
        const double bps = static_cast<double>(*speed_mbps) * 1e6;
        const auto& g = bits ? bits : blocks;
        if (g && g->increase > 0 && g->seconds < kMinBerSeconds) {
          too_short = "the pre-FEC bit error ratio needs " + FormatSeconds(kMinBerSeconds) + " of samples, has " +
                      FormatSeconds(g->seconds) + " (" + std::to_string(g->increase) + " corrected " +
                      (bits ? "bits" : "blocks") + " in it)";
        } else if (g) {
          ber = EstimatePreFecBer(g->increase, g->seconds, bps);
          ber_from = (bits ? "" : "at least, from ") + std::to_string(g->increase) + " corrected " +
                     (bits ? "bits" : "blocks") + " in " + FormatSeconds(g->seconds) + " at " +
                     std::to_string(*speed_mbps / 1000) + " Gb/s";
        }
      }
      const bool fec_off = f.fec.active && *f.fec.active == FecMode::kOff;
      if (uncorr && uncorr->increase > 0) {
        r.verdict = Verdict::kFailed;
        r.reason = std::to_string(uncorr->increase) + " uncorrectable FEC blocks in the last " +
                   std::to_string(static_cast<long long>(uncorr->seconds)) + " s (FEC " + mode +
                   "): frames are being lost on the link";
        r.fix = FixOptics(f.netdev);
      } else if (ber && *ber > policy.pre_fec_ber_warning) {
        r.verdict = Verdict::kWarning;
        r.reason = "pre-FEC bit error ratio about " + Sci(*ber) + " (" + ber_from + "; FEC " + mode + "), above " +
                   Sci(policy.pre_fec_ber_warning) + ": the link is near its margin and will lose frames or flap next";
        r.fix = FixOptics(f.netdev);
      } else if (fec_off && speed_mbps && *speed_mbps >= kRsRequiredMbps) {
        r.verdict = Verdict::kWarning;
        r.reason = "FEC is off on a " + std::to_string(*speed_mbps / 1000) +
                   " Gb/s link: IEEE 802.3 PHYs of 100 Gb/s and more need RS-FEC, without it the link errors";
        r.fix = "`ethtool --set-fec " + f.netdev + " encoding rs` (or `auto`), and the same FEC on the switch port";
      } else if (!too_short.empty()) {
        r.reason = "FEC " + mode + (uncorr ? ", no uncorrectable block in the last " + FormatSeconds(uncorr->seconds) : "") +
                   "; " + too_short;
      } else if (uncorr || ber || (fec_off && speed_mbps)) {
        r.verdict = Verdict::kOk;
        r.reason = "FEC " + mode + (uncorr ? ", no uncorrectable block in the last " + FormatSeconds(uncorr->seconds) : "") +
                   (ber ? ", pre-FEC bit error ratio about " + Sci(*ber) + " (" + ber_from + ")" : "") +
                   (fec_off ? ", at " + std::to_string(*speed_mbps / 1000) + " Gb/s, which needs none" : "");
      } else if (f.fec.uncorrectable_blocks.total.value_or(0) > 0) {
        r.verdict = Verdict::kWarning;
        r.reason = std::to_string(*f.fec.uncorrectable_blocks.total) + " uncorrectable FEC blocks since the counters "
                   "started (FEC " + mode + "); whether they are recent needs a second collection";
        r.fix = FixOptics(f.netdev);
      } else if (!f.fec.has_stats || !f.fec.uncorrectable_blocks.total) {
        r.reason = "FEC " + mode + "; the driver of " + f.netdev + " counts no uncorrectable FEC blocks";
      } else if (f.fec.corrected_blocks.total.value_or(0) > 0 || f.fec.corrected_bits.total.value_or(0) > 0) {
        r.reason = "FEC " + mode + ", no uncorrectable block since the counters started; the rate of corrected "
                   "ones needs a second collection";
      } else {
        r.verdict = Verdict::kOk;
        r.reason = "FEC " + mode + ", no corrected or uncorrectable block since the counters started";
      }
      out.push_back(std::move(r));
    }
  }
};

}  // namespace

RDMAHD_REGISTER_CHECK("link_margin", FecCheck,
                      "no uncorrectable FEC blocks in the last hour, the pre-FEC error ratio under the threshold, "
                      "FEC on at 100 Gb/s and more");

RDMAHD_REGISTER_CONFIG_SECTION(FecPolicy, "host.fec", 90, {{"host.fec.pre_fec_ber_warning", "`1e-5`"}},
    [](const ConfigWalker& w, const ConfigNode& v, FecPolicy& out) {
      return w.VisitMap(v, {{"pre_fec_ber_warning", [&](const ConfigNode& f) {
                               std::optional<double> x;
                               Status s = w.ReadPositive(f, 1, "errors per bit", x);
                               if (s.ok() && x) out.pre_fec_ber_warning = *x;
                               return s;
                             }}});
    });

}  // namespace rdmahd
