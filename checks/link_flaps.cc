#include "checks/link_flaps.h"

#include <algorithm>
#include <functional>
#include <set>
#include <string>

#include "common/duration_text.h"
#include "core/topology.h"
#include "facts/kernel_log_facts.h"
#include "facts/netdev_facts.h"
#include "facts/rdma_device_facts.h"
#include "facts/read_backoff_reason.h"

namespace rdmahd {
namespace {

using std::chrono::duration;
using TimePoint = LinkFlapPolicy::TimePoint;

double Seconds(std::chrono::steady_clock::duration d) { return duration<double>(d).count(); }

// The kernel's widths: counters/link_downed is the 8-bit PMA LinkDownedCounter
// (PORT_PMA_ATTR(link_downed, 2, 8, 56) in drivers/infiniband/core/sysfs.c); carrier_changes is
// carrier_up_count + carrier_down_count, two atomic_t.
constexpr unsigned kLinkDownedBits = 8;
constexpr unsigned kCarrierChangesBits = 32;

constexpr std::string_view kSeriesPrefix = "link_flaps/";
constexpr std::string_view kActive = "active";
constexpr std::string_view kLinkDowned = "link_downed";
constexpr std::string_view kCarrierChanges = "carrier_changes";

// "link_flaps/mlx5_0/1/": the port's series are this plus kActive, kLinkDowned, kCarrierChanges.
std::string PortPrefix(const std::string& device, std::uint32_t port) {
  std::string p(kSeriesPrefix);
  p += device;
  p += '/';
  p += std::to_string(port);
  p += '/';
  return p;
}

std::string Series(const std::string& prefix, std::string_view name) {
  std::string s = prefix;
  s += name;
  return s;
}

const RdmaPortFacts* FindPort(const RdmaDevicesFacts* devices, const std::string& device, std::uint32_t port) {
  if (devices == nullptr) return nullptr;
  for (const RdmaDeviceFacts& d : devices->devices) {
    if (d.name != device) continue;
    for (const RdmaPortFacts& p : d.ports) {
      if (p.port == port) return &p;
    }
  }
  return nullptr;
}

// This collection's observation of a listed port, from the devices and netdev collectors' facts.
LinkFlapPolicy::Observation CurrentObservation(const RdmaPortFacts* port, const NetdevFacts* netdev) {
  LinkFlapPolicy::Observation o;
  if (port != nullptr) {
    if (port->state) o.active = port->state->id == kPortStateActive;
    o.link_downed = port->counters.Find(kLinkDowned);
  }
  if (netdev != nullptr) o.carrier_changes = netdev->carrier_changes;
  return o;
}

// Walks one series' samples in time order: the sample a collection at `t` saw (absent when the
// series was not recorded then). Calls must come with non-decreasing `t`.
class Cursor {
 public:
  explicit Cursor(std::vector<History::Sample> samples) : samples_(std::move(samples)) {}
  const History::Sample* At(TimePoint t) {
    while (next_ < samples_.size() && samples_[next_].last < t) ++next_;
    if (next_ < samples_.size() && samples_[next_].first <= t) return &samples_[next_];
    return nullptr;
  }
  // At(t)'s value; a counter sample of a new baseline (device re-created, counter reset) makes
  // `previous` forget the old baseline's value, so that it is never growth.
  std::optional<std::uint64_t> Value(TimePoint t, std::optional<std::uint64_t>& previous) {
    const History::Sample* s = At(t);
    if (s == nullptr) return std::nullopt;
    if (seen_ && baseline_ != s->baseline) previous.reset();
    seen_ = true;
    baseline_ = s->baseline;
    return s->value;
  }
  void AddTimes(std::vector<TimePoint>& times) const {
    for (const History::Sample& s : samples_) {
      times.push_back(s.first);
      times.push_back(s.last);
    }
  }

 private:
  std::vector<History::Sample> samples_;
  std::size_t next_ = 0;
  bool seen_ = false;  // baseline_ is that of a sample already replayed
  std::uint32_t baseline_ = 0;
};

// Replays the port's recorded timeline before `now` through the policy, then this collection's
// observation `current`. Only collections where a series changed (the first and last collection of
// each sample) move the policy: between them every observation repeats the one before.
void Replay(const History& history, const std::string& prefix, const HostLinkFlapPolicy& policy, TimePoint now,
            const LinkFlapPolicy::Observation& current, LinkFlapPortFacts& out) {
  Cursor state(history.Samples(Series(prefix, kActive)));
  Cursor downed(history.Samples(Series(prefix, kLinkDowned)));
  Cursor carrier(history.Samples(Series(prefix, kCarrierChanges)));
  std::vector<TimePoint> times;
  state.AddTimes(times);
  downed.AddTimes(times);
  carrier.AddTimes(times);
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  LinkFlapPolicy::PortHistory h;
  for (TimePoint t : times) {
    if (t >= now) break;
    LinkFlapPolicy::Observation o;
    if (const History::Sample* s = state.At(t)) o.active = s->value != 0;
    o.link_downed = downed.Value(t, h.link_downed);
    o.carrier_changes = carrier.Value(t, h.carrier_changes);
    LinkFlapPortFacts ignored;
    LinkFlapPolicy::Observe(h, o, t, policy, ignored);
  }
  // This collection's counters were recorded at `now`: a new baseline there is no growth either.
  (void)downed.Value(now, h.link_downed);
  (void)carrier.Value(now, h.carrier_changes);
  LinkFlapPolicy::Observe(h, current, now, policy, out);
}

class LinkFlapsCheck : public Check {
 public:
  void Record(const Snapshot& snapshot, const Config& config, History& history, TimePoint now) const override {
    if (!config.CollectorEnabled("link_flaps")) return;
    const auto* topology = snapshot.Get<Topology>();
    if (topology == nullptr) return;
    const auto* devices = snapshot.Get<RdmaDevicesFacts>();
    const auto* netdevs = snapshot.Get<RdmaNetdevFacts>();
    std::set<std::string> listed;
    for (const TopologyDevice& d : topology->devices) {
      for (const TopologyPort& tp : d.ports) {
        const std::string prefix = PortPrefix(d.name, tp.port);
        listed.insert(prefix);
        const NetdevFacts* nf = netdevs != nullptr && !tp.netdev.empty() ? netdevs->Find(tp.netdev) : nullptr;
        const LinkFlapPolicy::Observation o = CurrentObservation(FindPort(devices, d.name, tp.port), nf);
        if (o.active) history.RecordGauge(Series(prefix, kActive), *o.active ? 1 : 0, now);
        // A re-created device, or the port behind another netdev, is another counter.
        if (o.link_downed) {
          history.RecordCounter(Series(prefix, kLinkDowned), d.generation, *o.link_downed, now, kLinkDownedBits);
        }
        if (o.carrier_changes) {
          const std::uint64_t instance = d.generation ^ (std::hash<std::string>{}(tp.netdev) << 1);
          history.RecordCounter(Series(prefix, kCarrierChanges), instance, *o.carrier_changes, now,
                                kCarrierChangesBits);
        }
      }
    }
    // Ports that went away (device removed, driver reloading) count as down until forgotten: a
    // port back within drop_window was a flap.
    const HostLinkFlapPolicy& policy = config.Section<HostLinkFlapPolicy>();
    const auto forget_after = std::chrono::duration_cast<History::Clock::duration>(policy.drop_window + policy.recovery);
    for (const std::string& name : history.Names(kSeriesPrefix)) {
      if (!name.ends_with(kActive)) continue;
      const std::string prefix = name.substr(0, name.size() - kActive.size());
      if (listed.contains(prefix)) continue;
      const std::vector<History::Sample> samples = history.Samples(name);
      const bool ever_active =
          std::any_of(samples.begin(), samples.end(), [](const History::Sample& s) { return s.value != 0; });
      const bool down_long = !samples.empty() && samples.back().value == 0 && now - samples.back().first > forget_after;
      if (samples.empty() || !ever_active || down_long) {
        for (std::string_view series : {kActive, kLinkDowned, kCarrierChanges}) history.Forget(Series(prefix, series));
        continue;
      }
      history.RecordGauge(name, 0, now);
    }
  }

  // The kernel's "Link down" lines about the port within the window: about its netdev, or about
  // the device when the line names no netdev and the device has one port.
  static void KernelLinkDowns(const KernelLogFacts& log, const TopologyDevice& d, const TopologyPort& tp,
                              double window_seconds, LinkFlapPortFacts& f) {
    if (!log.readable) return;
    for (const KernelLogDeviceFacts& kd : log.devices) {
      if (kd.device != d.name) continue;
      for (const KernelEvent& e : kd.recent) {
        if (e.name != "link_down" || !e.realtime_s) continue;
        const bool ours = e.netdev.empty() ? d.ports.size() == 1 : (!tp.netdev.empty() && e.netdev == tp.netdev);
        const double age = static_cast<double>(std::max<std::int64_t>(0, log.now_unix_s - *e.realtime_s));
        if (!ours || age > window_seconds) continue;
        ++f.kernel_link_downs;
        if (!f.kernel_last_link_down_age_seconds || age < *f.kernel_last_link_down_age_seconds) {
          f.kernel_last_link_down_age_seconds = age;
        }
      }
    }
  }

  void EvaluateOverTime(const CheckContext& ctx, std::vector<CheckResult>& out) const override {
    if (!ctx.config.CollectorEnabled("link_flaps")) return;
    const auto* topology = ctx.snapshot.Get<Topology>();
    if (topology == nullptr) return;
    const auto* devices = ctx.snapshot.Get<RdmaDevicesFacts>();
    const auto* netdevs = ctx.snapshot.Get<RdmaNetdevFacts>();
    const auto* kernel_log = ctx.snapshot.Get<KernelLogFacts>();
    const HostLinkFlapPolicy& policy = ctx.config.Section<HostLinkFlapPolicy>();
    LinkFlapFacts facts;
    facts.drop_window_seconds = Seconds(policy.drop_window);
    facts.window_seconds = Seconds(policy.window);
    facts.recovery_seconds = Seconds(policy.recovery);
    facts.threshold = policy.threshold;
    facts.ports.reserve(topology->PortCount());
    for (const TopologyDevice& d : topology->devices) {
      for (const TopologyPort& tp : d.ports) {
        LinkFlapPortFacts f;
        f.device = d.name;
        f.port = tp.port;
        // The netdev of the port's RoCE GIDs (its lowest-index one: a VLAN netdev follows its parent).
        f.netdev = tp.netdev;
        const NetdevFacts* nf = netdevs != nullptr && !tp.netdev.empty() ? netdevs->Find(tp.netdev) : nullptr;
        const RdmaPortFacts* port = FindPort(devices, d.name, tp.port);
        const LinkFlapPolicy::Observation o = CurrentObservation(port, nf);
        if (!o.active) {
          f.note = devices == nullptr ? "the devices collector did not run"
                                      : "/sys/class/infiniband/" + d.name + "/ports/" + std::to_string(tp.port) +
                                            "/state unreadable (see the devices collector's errors)";
          const std::string backoff = port == nullptr ? std::string()
                                                      : BackedOffReason(port->read_backoff, [](const std::string& file) {
                                                          return file == "state";
                                                        });
          if (!backoff.empty()) f.note += ": " + backoff;
        }
        f.link_downed = o.link_downed;
        f.carrier_changes = o.carrier_changes;
        Replay(ctx.history, PortPrefix(d.name, tp.port), policy, ctx.now, o, f);
        if (kernel_log != nullptr) KernelLinkDowns(*kernel_log, d, tp, facts.window_seconds, f);
        facts.ports.push_back(std::move(f));
      }
    }
    std::sort(facts.ports.begin(), facts.ports.end(), [](const LinkFlapPortFacts& a, const LinkFlapPortFacts& b) {
      return std::tie(a.device, a.port) < std::tie(b.device, b.port);
    });
    AppendLinkFlapVerdicts(facts, out);
    if (ctx.derived != nullptr) ctx.derived->Put(std::move(facts));
  }
};

}  // namespace

void LinkFlapPolicy::Observe(PortHistory& h, const Observation& o, TimePoint now, const HostLinkFlapPolicy& policy,
                             LinkFlapPortFacts& out) {
  const auto drop_window = std::chrono::duration_cast<std::chrono::steady_clock::duration>(policy.drop_window);
  const auto window = std::chrono::duration_cast<std::chrono::steady_clock::duration>(policy.window);
  const auto recovery = std::chrono::duration_cast<std::chrono::steady_clock::duration>(policy.recovery);
  auto flap = [&](std::uint64_t n) {
    for (std::uint64_t i = 0; i < n && i < 1000; ++i) h.flaps.push_back(now);
    if (n > 0) h.last_flap = now;
  };

  const std::optional<bool> active = o.listed ? o.active : std::optional<bool>(false);
  if (active) {
    if (!*active) {
      if (!h.down_since) h.down_since = now;
    } else {
      if (h.down_since) {
        // A port coming up for the first time since the daemon started neither flapped nor dropped.
        if (h.ever_active && now - *h.down_since <= drop_window) {
          flap(1);
        } else if (h.ever_active) {
          h.drop_ended = now;
        }
        h.down_since.reset();
      } else if (h.last_active && *h.last_active) {
        // ACTIVE at both ends: counter growth is flaps in between (a reset, i.e. a smaller value,
        // is a re-created device: no growth).
        std::uint64_t unseen = 0;
        if (o.link_downed && h.link_downed && *o.link_downed > *h.link_downed) {
          unseen = *o.link_downed - *h.link_downed;
        }
        if (o.carrier_changes && h.carrier_changes && *o.carrier_changes > *h.carrier_changes) {
          unseen = std::max<std::uint64_t>(unseen, (*o.carrier_changes - *h.carrier_changes + 1) / 2);
        }
        flap(unseen);
      }
      h.ever_active = true;
    }
    h.last_active = active;
  }
  if (o.link_downed) h.link_downed = o.link_downed;
  if (o.carrier_changes) h.carrier_changes = o.carrier_changes;

  while (!h.flaps.empty() && now - h.flaps.front() > window) h.flaps.pop_front();
  const auto in_window = static_cast<std::uint32_t>(h.flaps.size());
  if (in_window >= policy.threshold && h.last_flap) {
    const TimePoint until = *h.last_flap + recovery;
    if (!h.flapping_until || until > *h.flapping_until) h.flapping_until = until;
  }

  out.active = o.listed ? o.active : std::optional<bool>(false);
  out.flaps_in_window = in_window;
  out.flapping = in_window >= policy.threshold || (h.flapping_until && now < *h.flapping_until);
  if (h.down_since) out.down_for_seconds = Seconds(now - *h.down_since);
  if (h.last_flap) out.last_flap_age_seconds = Seconds(now - *h.last_flap);
  if (h.drop_ended) out.last_drop_age_seconds = Seconds(now - *h.drop_ended);
  const bool down_too_long = h.down_since && h.ever_active && now - *h.down_since > drop_window;
  const bool recovering = h.drop_ended && now - *h.drop_ended < recovery;
  out.link_dropped = down_too_long || recovering;
}

void AppendLinkFlapVerdicts(const LinkFlapFacts& facts, std::vector<CheckResult>& out) {
  auto result = [](std::string subject, Verdict v, std::string reason, std::string fix = "") {
    return CheckResult{"", std::move(subject), v, std::move(reason), std::move(fix)};
  };
  // Runs for every port on every scrape: the text is appended into one buffer per verdict
  // rather than built from chained temporaries (a dozen allocations per port).
  const std::string window = FormatSeconds(facts.window_seconds);
  for (const LinkFlapPortFacts& p : facts.ports) {
    std::string subject = p.device;
    subject += '/';
    subject += std::to_string(p.port);
    // " (netdev X) [link_downed N, carrier_changes M]", each part only when known.
    std::string tail;
    if (!p.netdev.empty()) {
      tail += " (netdev ";
      tail += p.netdev;
      tail += ')';
    }
    if (p.link_downed || p.carrier_changes) {
      tail += " [";
      if (p.link_downed) {
        tail += "link_downed ";
        tail += std::to_string(*p.link_downed);
      }
      if (p.carrier_changes) {
        if (p.link_downed) tail += ", ";
        tail += "carrier_changes ";
        tail += std::to_string(*p.carrier_changes);
      }
      tail += ']';
    }
    std::string reason;
    if (p.link_dropped) {
      reason = p.down_for_seconds
                   ? "link down for " + FormatSeconds(*p.down_for_seconds) + ", longer than the " +
                         FormatSeconds(facts.drop_window_seconds) + " drop window"
                   : "link dropped and came back " + FormatSeconds(p.last_drop_age_seconds.value_or(0)) +
                         " ago (flagged for the " + FormatSeconds(facts.recovery_seconds) + " recovery time)";
    }
    if (p.flapping) {
      if (!reason.empty()) reason += "; ";
      reason += std::to_string(p.flaps_in_window) + (p.flaps_in_window == 1 ? " flap" : " flaps") + " in the last " +
                window + " (threshold " +
                std::to_string(facts.threshold) + ")";
      if (p.last_flap_age_seconds) reason += ", last " + FormatSeconds(*p.last_flap_age_seconds) + " ago";
    }
    // The kernel log, when it logged link-downs for the port: confirms a flap, or tells of one the
    // counters could not (the daemon started after it: no baseline yet).
    std::string kernel;
    if (p.kernel_link_downs > 0) {
      kernel = "the kernel logged " + std::to_string(p.kernel_link_downs) + " link down" +
               (p.kernel_link_downs == 1 ? "" : "s") + " in the last " + window;
      if (p.kernel_last_link_down_age_seconds) {
        kernel += ", last " + FormatSeconds(*p.kernel_last_link_down_age_seconds) + " ago";
      }
    }
    const std::string nd = p.netdev.empty() ? std::string("<netdev>") : p.netdev;
    auto fix = [&] {
      return "check the cable, transceiver and switch port: `ethtool " + nd + "`, `ethtool -m " + nd +
             "` (optical power), the switch port's error counters and `rdma link show " + subject +
             "`; reseat or replace the cable/transceiver";
    };
    if (!reason.empty()) {
      if (!kernel.empty()) reason += "; " + kernel;
      reason += tail;
      out.push_back(result(subject, Verdict::kFailed, std::move(reason), fix()));
      continue;
    }
    if (!kernel.empty() && p.flaps_in_window == 0) {
      out.push_back(result(subject, Verdict::kWarning,
                           kernel + ", but the port's state and counters showed no flap (one before the daemon "
                                    "started, or shorter than a collection on a driver that counts none)" + tail,
                           fix()));
      continue;
    }
    if (!p.active) {
      out.push_back(result(std::move(subject), Verdict::kUnknown, "port state unknown: " + p.note));
      continue;
    }
    constexpr std::string_view kNotUp =
        " (port down, not yet past the drop window, or never up since the daemon started)";
    constexpr std::string_view kNoFlaps = "no flaps in the last ";
    reason.reserve(kNoFlaps.size() + window.size() + kNotUp.size() + tail.size());
    reason += kNoFlaps;
    reason += window;
    if (!*p.active) reason += kNotUp;
    reason += tail;
    out.push_back(result(std::move(subject), Verdict::kOk, std::move(reason)));
  }
}

RDMAHD_REGISTER_CHECK("link_flaps", LinkFlapsCheck,
                      "no RDMA port flapped or dropped its link within the host.link_flaps windows");

}  // namespace rdmahd
