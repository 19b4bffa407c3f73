#include "collectors/link_flaps.h"

#include <chrono>
#include <optional>

#include "config/config_section.h"

namespace rdmahd {

Status LinkFlapCollector::Collect(const CollectContext&, Snapshot&, CollectorOutcome&) { return Status::Ok(); }

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
