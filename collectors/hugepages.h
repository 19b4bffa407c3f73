// The "hugepages" collector: hugepage pools per page size, system-wide
// (/sys/kernel/mm/hugepages/hugepages-<kB>kB/) and per NUMA node
// (/sys/devices/system/node/nodeN/hugepages/, or nodeN/meminfo for the default size where a node
// has no hugepages folder), the default size and Hugetlb from /proc/meminfo, the transparent
// hugepage mode and automatic NUMA balancing. Facts: HostMemoryFacts (facts/host_memory_facts.h).
//
// Scrape cost: the pool and node folders are listed on every collection (a handful of entries:
// sizes and nodes come and go only with boot parameters and memory hotplug, but listing is what
// makes a new pool visible at once); the count files are held open and re-read with pread.
#pragma once

#include <string>

#include "core/collector.h"
#include "facts/host_memory_facts.h"

namespace rdmahd {

class HugepagesCollector : public Collector {
 public:
  Status Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& outcome) override;
  void Render(const Snapshot& snapshot, MetricSink& sink) const override;

 private:
  HeldFiles held_;
};

// One collection, without held descriptors (tests, `check`).
HostMemoryFacts ReadHostMemory(const NodeFs& fs, std::vector<std::string>& errors);

}  // namespace rdmahd
