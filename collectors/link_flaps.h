// The "link_flaps" collector: renders each RDMA port's link history (rdma_port_flapping,
// rdma_port_link_dropped, rdma_port_flaps_in_window). It reads nothing itself: the "link_flaps"
// check (checks/link_flaps.h) derives the history from the devices and netdev collectors' facts
// and the engine's History, and publishes it as LinkFlapFacts into the report. Disabling this
// collector turns the check off too.
#pragma once

#include "core/collector.h"
#include "facts/link_flap_facts.h"

namespace rdmahd {

class LinkFlapCollector : public Collector {
 public:
  Status Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& outcome) override;
  void Render(const Snapshot& snapshot, MetricSink& sink) const override;
};

}  // namespace rdmahd
