// The "devlink_health" collector: the devlink health reporters of each RDMA device's PCI function
// (facts/devlink_health_facts.h), one DEVLINK_CMD_HEALTH_REPORTER_GET dump per collection over
// generic netlink, matched to the devices by their devlink handle "pci/<PCI address>". Only on the
// live node (NodeFs::asks_kernel): a capture has no reporters to ask ("not captured"). A kernel
// without the devlink family, or a dump that fails, leaves every device unknown with the reason.
#pragma once

#include <memory>

#include "collectors/genl_transport.h"
#include "core/collector.h"

namespace rdmahd {

class DevlinkHealthCollector : public Collector {
 public:
  DevlinkHealthCollector();  // the "devlink" family through MnlGenlTransport
  explicit DevlinkHealthCollector(std::unique_ptr<GenlTransport> transport);
  Status Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& outcome) override;
  void Render(const Snapshot& snapshot, MetricSink& sink) const override;

 private:
  std::unique_ptr<GenlTransport> transport_;
  std::uint32_t seq_ = 0;
};

}  // namespace rdmahd
