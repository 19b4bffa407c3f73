#include "collectors/link_flaps.h"

#include <algorithm>

#include "collectors/host_devices.h"  // KernelPaths
#include "collectors/ib_sysfs_parse.h"
#include "common/parse.h"
#include "config/config_section.h"

namespace rdmahd {
namespace {

using std::chrono::duration;

double Seconds(std::chrono::steady_clock::duration d) { return duration<double>(d).count(); }

constexpr std::uint32_t kStateActive = 4;

}  // namespace

LinkFlapCollector::LinkFlapCollector(SteadyNow now) : now_(std::move(now)) {}

void LinkFlapCollector::Observe(PortHistory& h, const Observation& o, TimePoint now, const HostLinkFlapPolicy& policy,
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


Status LinkFlapCollector::Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& outcome) {
  const NodeFs& fs = ctx.fs;
  const HostLinkFlapPolicy& policy = ctx.config.Section<HostLinkFlapPolicy>();
  const TimePoint now = now_();
  LinkFlapFacts facts;
  facts.drop_window_seconds = Seconds(policy.drop_window);
  facts.window_seconds = Seconds(policy.window);
  facts.recovery_seconds = Seconds(policy.recovery);
  facts.threshold = policy.threshold;

  // Every port of the collection's Topology, in its order (by device name, then port number).
  std::vector<Port*> listed;
  for (const TopologyDevice& d : ctx.topology.devices) {
    for (const TopologyPort& tp : d.ports) {
      Port& port = ports_[std::make_pair(d.name, tp.port)];
      listed.push_back(&port);
      LinkFlapPortFacts f;
      f.device = d.name;
      f.port = tp.port;
      // The netdev of the port's RoCE GIDs (its lowest-index one: a VLAN netdev follows its parent).
      f.netdev = tp.netdev;
      if (!port.files || port.files->generation != d.generation || port.files->netdev != f.netdev) {
        // First seen, device re-created, or another netdev: open what this port is now.
        PortFiles& pf = port.files.emplace();
        pf.generation = d.generation;
        pf.netdev = f.netdev;
        const std::string dir = fs.Sys("class/infiniband/" + d.name + "/ports/" + std::to_string(tp.port));
        pf.state.emplace(dir + "/state");
        pf.link_downed.emplace(dir + "/counters/link_downed");
        if (!f.netdev.empty()) pf.carrier_changes.emplace(fs.Sys("class/net/" + f.netdev + "/carrier_changes"));
      }
      PortFiles& pf = *port.files;
      Observation o;
      if (auto text = pf.state->Read(fs, read_buf_)) {
        if (auto state = ParseSysfsEnum(*text)) {
          o.active = state->id == kStateActive;
        } else {
          f.note = pf.state->path() + ": unparseable";
        }
      } else {
        f.note = text.error().message;
      }
      if (auto text = pf.link_downed->Read(fs, read_buf_)) o.link_downed = ParseU64(*text);
      if (pf.carrier_changes) {
        if (auto text = pf.carrier_changes->Read(fs, read_buf_)) o.carrier_changes = ParseU64(*text);
      }
      if (!f.note.empty()) {
        outcome.errors.push_back(f.device + "/" + std::to_string(f.port) + ": " + f.note);
        f.note = KernelPaths(fs, f.note);
      }
      f.link_downed = o.link_downed;
      f.carrier_changes = o.carrier_changes;
      Observe(port.history, o, now, policy, f);
      facts.ports.push_back(std::move(f));
    }
  }
  // Ports that went away (device removed, driver reloading): their series go with them, like every
  // other series of the device, and so do their descriptors, but the history stays: a port back
  // within drop_window was a flap.
  const auto forget_after = policy.drop_window + policy.recovery;
  for (auto it = ports_.begin(); it != ports_.end();) {
    Port& port = it->second;
    if (std::find(listed.begin(), listed.end(), &port) != listed.end()) {
      ++it;
      continue;
    }
    port.files.reset();
    PortHistory& h = port.history;
    if (!h.ever_active || (h.down_since && now - *h.down_since > forget_after)) {
      it = ports_.erase(it);
      continue;
    }
    LinkFlapPortFacts ignored;
    Observation o;
    o.listed = false;
    Observe(h, o, now, policy, ignored);
    ++it;
  }
  std::sort(facts.ports.begin(), facts.ports.end(), [](const LinkFlapPortFacts& a, const LinkFlapPortFacts& b) {
    return std::tie(a.device, a.port) < std::tie(b.device, b.port);
  });
  snapshot.Put(std::move(facts));
  return Status::Ok();
}

void LinkFlapCollector::Render(const Snapshot& snapshot, MetricSink& sink) const {
  const LinkFlapFacts* facts = snapshot.Get<LinkFlapFacts>();
  if (facts == nullptr) return;
  auto flapping = sink.Gauge("rdma_port_flapping",
                             "1 while the port flapped host.link_flaps.threshold times within the window, and until "
                             "the recovery time passed without a flap; else 0.");
  auto dropped = sink.Gauge("rdma_port_link_dropped",
                            "1 while the port has been down longer than the drop window, and until the recovery time "
                            "passed after it came back; else 0.");
  auto count = sink.Gauge("rdma_port_flaps_in_window", "Flaps of the port within host.link_flaps.window.");
  for (const LinkFlapPortFacts& p : facts->ports) {
    const std::string port = std::to_string(p.port);
    flapping.Add({{"device", p.device}, {"port", port}}, p.flapping ? 1 : 0);
    dropped.Add({{"device", p.device}, {"port", port}}, p.link_dropped ? 1 : 0);
    count.Add({{"device", p.device}, {"port", port}}, p.flaps_in_window);
  }
}

namespace {
using std::chrono::milliseconds;

Status ParseLinkFlaps(const ConfigWalker& w, const ConfigNode& v, HostLinkFlapPolicy& out) {
  Status st = w.VisitMap(v, {
      {"drop_window",
       [&](const ConfigNode& f) { return w.ReadDuration(f, milliseconds{1000}, milliseconds{3'600'000}, out.drop_window); }},
      {"window",
       [&](const ConfigNode& f) { return w.ReadDuration(f, milliseconds{1000}, milliseconds{86'400'000}, out.window); }},
      {"threshold",
       [&](const ConfigNode& f) {
         std::optional<int> n;
         Status s = w.ReadInt(f, 1, 1000, n);
         if (s.ok() && n) out.threshold = static_cast<std::uint32_t>(*n);
         return s;
       }},
      {"recovery",
       [&](const ConfigNode& f) { return w.ReadDuration(f, milliseconds{0}, milliseconds{86'400'000}, out.recovery); }},
  });
  if (st.ok() && out.window < out.drop_window) {
    return w.FailAt(v, "window (" + std::to_string(out.window.count()) + "ms) must not be shorter than drop_window (" +
                           std::to_string(out.drop_window.count()) + "ms): a flap lasts up to drop_window");
  }
  return st;
}
}  // namespace

RDMAHD_REGISTER_CONFIG_SECTION(HostLinkFlapPolicy, "host.link_flaps", 70,
    {{"host.link_flaps.drop_window", "`30s`"}, {"host.link_flaps.window", "`600s`"},
     {"host.link_flaps.threshold", "`1`"}, {"host.link_flaps.recovery", "`900s`"}},
    ParseLinkFlaps);

RDMAHD_REGISTER_COLLECTOR(
    "link_flaps", LinkFlapCollector,
    "link flap and drop history per RDMA port (state changes, link_downed, carrier_changes)");

}  // namespace rdmahd
