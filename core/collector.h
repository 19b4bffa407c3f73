// Collector: reads one area of the node (RDMA ports, RoCE QoS, host memory, ...) into typed facts
// and renders those facts as metrics. It never decides health; checks do.
//
// Adding a collector = one .cc file (with its class, or a .h/.cc pair when tests need the class)
// ending in RDMAHD_REGISTER_COLLECTOR, its facts in a data-only header under facts/, its
// _test.cc, a fixture under tests/fixtures/, and one line in CMakeLists.txt
// (RDMAHD_COLLECTOR_SOURCES). docs/metrics.md documents its metrics. A collector with settings
// registers its config section in the same file (RDMAHD_REGISTER_CONFIG_SECTION,
// config/config_section.h) and reads it as ctx.config.Section<Type>().
#pragma once

#include "common/metric_sink.h"
#include "common/node_fs.h"
#include "common/result.h"
#include "config/config.h"
#include "core/registry.h"
#include "core/snapshot.h"
#include "core/topology.h"

namespace rdmahd {

struct CollectContext {
  const NodeFs& fs;
  const Config& config;
  // The RDMA devices, ports and port -> netdev links of this collection (after the config's
  // device filter). Collectors take placement from here, never from another collector's facts:
  // collectors run concurrently and independently.
  const Topology& topology;
};

class Collector {
 public:
  virtual ~Collector() = default;

  // Reads the node and stores facts in `snapshot` (this collector's own part of the collection:
  // it holds no other collector's facts). Problems with single values or devices go into
  // `outcome.errors` (the rest is still collected); a returned error means nothing usable was
  // collected. One collector never runs concurrently with itself, so it may keep state (held
  // file descriptors, previous values) without locking; different collectors run in parallel.
  virtual Status Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& outcome) = 0;

  // Renders this collector's facts from the whole collection's `snapshot` (absent facts render
  // nothing). Called concurrently from several scrapes: must not change state.
  virtual void Render(const Snapshot& snapshot, MetricSink& sink) const = 0;
};

// Every collector linked into the binary.
Registry<Collector>& CollectorRegistry();

// Use once per collector, at namespace scope in its .cc file.
#define RDMAHD_REGISTER_COLLECTOR(name, Type, description)                               \
  [[maybe_unused]] static const bool rdmahd_collector_registered_##Type =                \
      ::rdmahd::internal::RegisterOrDie(::rdmahd::CollectorRegistry(),                    \
                                        {name, description, [] { return std::make_unique<Type>(); }})

}  // namespace rdmahd
