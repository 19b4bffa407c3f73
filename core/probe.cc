#include "core/probe.h"

namespace rdmahd {

Registry<Probe>& ProbeRegistry() {
  static Registry<Probe> registry;
  return registry;
}

}  // namespace rdmahd
