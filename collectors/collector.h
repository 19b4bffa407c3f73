// Collector: reads one area of the node (RDMA ports, RoCE QoS, host memory, ...) into typed facts
// and renders those facts as metrics. It never decides health; checks do.
//
// Adding a collector = one .h/.cc pair with RDMAHD_REGISTER_COLLECTOR, its _test.cc, a fixture,
// and one line in CMakeLists.txt.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/snapshot.h"
#include "common/metric_sink.h"
#include "common/node_fs.h"
#include "common/result.h"
#include "config/config.h"

namespace rdmahd {

struct CollectContext {
  const NodeFs& fs;
  const Config& config;
};

class Collector {
 public:
  virtual ~Collector() = default;

  virtual std::string_view Name() const = 0;
  virtual std::string_view Description() const = 0;

  // Reads the node and stores facts in `snapshot`. Problems with single values or devices go into
  // `outcome.errors` (the rest is still collected); a returned error means nothing usable was
  // collected. Calls are serialized by the CollectionEngine, so collectors may keep state (held
  // file descriptors, previous values) without locking.
  virtual Status Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& outcome) = 0;

  // Renders this collector's facts from `snapshot` (absent facts render nothing).
  virtual void Render(const Snapshot& snapshot, MetricSink& sink) const = 0;
};

using CollectorFactory = std::function<std::unique_ptr<Collector>()>;

struct CollectorRegistration {
  std::string name;
  CollectorFactory factory;
};

// All collectors linked into the binary, in name order.
const std::vector<CollectorRegistration>& RegisteredCollectors();
std::vector<std::string> RegisteredCollectorNames();

namespace internal {
bool RegisterCollector(std::string name, CollectorFactory factory);
}  // namespace internal

// Use once per collector, at namespace scope in its .cc file.
#define RDMAHD_REGISTER_COLLECTOR(name, Type)                                       \
  [[maybe_unused]] static const bool rdmahd_collector_registered_##Type =           \
      ::rdmahd::internal::RegisterCollector(name, [] { return std::make_unique<Type>(); })

}  // namespace rdmahd
