// The "hugepages" collector: hugepage pools per page size, system-wide
// (/sys/kernel/mm/hugepages/hugepages-<kB>kB/) and per NUMA node
// (/sys/devices/system/node/nodeN/hugepages/, or nodeN/meminfo for the default size where a node
// has no hugepages folder), the default size and Hugetlb from /proc/meminfo, the transparent
// hugepage mode and automatic NUMA balancing. Facts: HostMemoryFacts (facts/host_memory_facts.h).
//
// Scrape cost: the count files, /proc/meminfo and numa_balancing are held open and re-read with
// pread. The pool and node folders are listed when the collector first runs, then again every
// kNetdevRelistInterval (30 s) or after a count file under them went away: sizes and nodes come
// and go only with boot parameters and memory hotplug, so a steady-state scrape lists nothing and
// a new pool or node is seen within the interval.
#pragma once

#include <string>

#include "collectors/listing_cache.h"
#include "common/held_files.h"
#include "core/collector.h"
#include "facts/host_memory_facts.h"

namespace rdmahd {

class HugepagesCollector : public Collector {
 public:
  explicit HugepagesCollector(SteadyNow now = std::chrono::steady_clock::now) : listings_(std::move(now)) {}
  Status Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& outcome) override;
  void Render(const Snapshot& snapshot, MetricSink& sink) const override;

 private:
  HeldFiles held_;
  ListingCache listings_;
};

// One collection, without held descriptors (tests, `check`).
HostMemoryFacts ReadHostMemory(const NodeFs& fs, std::vector<std::string>& errors);

}  // namespace rdmahd
