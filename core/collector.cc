#include "core/collector.h"

namespace rdmahd {

// Function-local static: safe against static-initialisation order across translation units.
Registry<Collector>& CollectorRegistry() {
  static Registry<Collector> registry;
  return registry;
}

}  // namespace rdmahd
