// The "verbs" collector: what only libibverbs can tell about each RDMA device: its limits
// (ibv_query_device: max_qp, max_cqe, max_mr_size, ...) and per port the active and maximum MTU
// and the port state as verbs reports it (ibv_query_port). Facts: VerbsFacts; metrics
// rdma_device_max_* and rdma_port_{active,max}_mtu_bytes etc. (docs/metrics.md, "Verbs").
//
// Live system only: libibverbs always talks to the running kernel, whatever --path.sysfs says. So
// the provider is asked only when NodeFs::asks_kernel() (the sysfs root is /sys); against any other
// root (fixture trees, captured nodes) the collector succeeds with VerbsFacts{queried = false} and
// renders nothing, instead of mixing the build machine's devices into a fixture's exposition.
//
// Cost: ibv_open_device is expensive (it opens /dev/infiniband/uverbsN and allocates a context in
// the provider library), so opened devices are cached across collections, with their device
// attributes (fixed while the device exists). Each collection lists the devices (cheap), queries
// every port of every cached device, opens devices that are new or were re-created (same name,
// other kernel index), and closes those that left. A query that fails with ENODEV/EIO/ENXIO means
// the cached context outlived its device: it is closed and the device reopened once.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/layout_cache.h"
#include "core/collector.h"
#include "collectors/verbs_provider.h"
#include "facts/verbs_facts.h"

namespace rdmahd {

class VerbsDevicesCollector : public Collector {
 public:
  using ProviderFactory = std::function<std::unique_ptr<VerbsProvider>()>;

  // The registered collector: libibverbs, created on first use on a live system.
  VerbsDevicesCollector();
  // For tests: any provider (the factory is called once, on the first collection that queries).
  explicit VerbsDevicesCollector(ProviderFactory factory);
  ~VerbsDevicesCollector() override;

  Status Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& outcome) override;
  void Render(const Snapshot& snapshot, MetricSink& sink) const override;

  // Devices currently held open (for tests).
  std::size_t open_devices() const { return open_.size(); }


 private:
  struct OpenDevice {
    VerbsDeviceId id;
    std::unique_ptr<VerbsDeviceHandle> handle;
    VerbsDeviceAttrs attrs;  // queried once, right after opening
  };
  // Opens `id` and queries its attributes.
  Result<OpenDevice> OpenAndQuery(const VerbsDeviceId& id);

  ProviderFactory factory_;
  std::unique_ptr<VerbsProvider> provider_;
  LayoutCache<OpenDevice> open_;  // by device name
};

}  // namespace rdmahd
