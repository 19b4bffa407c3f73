#include "collectors/link_flaps.h"

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

RDMAHD_REGISTER_COLLECTOR(
    "link_flaps", LinkFlapCollector,
    "link flap and drop history per RDMA port (state changes, link_downed, carrier_changes)");

}  // namespace rdmahd
