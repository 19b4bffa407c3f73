// The subjects of the error-rate checks: a port's IB PMA counters (port_errors), its hw_counters
// (roce_transport_errors) and a netdev's driver and standard statistics (netdev_errors), each as a
// Subject read from a collection's facts, with the instance (the device's generation) that starts a
// new baseline when the device is re-created. A Subject points into the snapshot's facts: valid
// while the callback runs.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/snapshot.h"
#include "facts/rdma_device_facts.h"

namespace rdmahd::error_rates {

using ValueOf = std::function<std::optional<std::uint64_t>(std::string_view)>;

// One subject (a port, a netdev) of one check.
struct Subject {
  std::string_view check;  // the series' prefix is "<check>/<name>/"
  std::string name;         // "mlx5_0/1", "ens1f0np0"
  std::uint64_t instance = 0;
  // A port's values: `counters`, else `fallback`'s (read by slot, see SubjectHandles::Load); a
  // netdev's: `value`.
  const CounterValues* counters = nullptr;
  const CounterValues* fallback = nullptr;
  ValueOf value;
  std::string netdev;  // for the fix's NETDEV; empty when unknown
  // The port's files in read backoff, and the folder prefixes ("counters/") the subject's values
  // come from: a rule's counter among them is unknown, not 0.
  const std::vector<BackedOffRead>* backoff = nullptr;
  std::array<std::string_view, 2> backoff_dirs{};
  // The port's counter files whose text is not a number (RdmaPortFacts::unparseable), in the same
  // folders' names: a rule's counter among them is unknown, not 0.
  const std::vector<std::string>* unparseable = nullptr;
  // Neither: every value the subject's rules need was read.
  bool AllRead() const {
    return (backoff == nullptr || backoff->empty()) && (unparseable == nullptr || unparseable->empty());
  }
};

using SubjectFn = std::function<void(const Subject&)>;

// The ports of the devices collector's facts as subjects of port_errors (their counters/) and of
// roce_transport_errors (their hw_counters, then counters/ for the packet counts), with the
// device's generation as the counters' instance.
void PortCounterSubjects(const Snapshot& snapshot, const SubjectFn& fn);
void PortHwCounterSubjects(const Snapshot& snapshot, const SubjectFn& fn);
// The netdevs whose driver statistics or standard statistics were read, as subjects of
// netdev_errors; a netdev's instance follows the generation of the RDMA device behind it (a driver
// reload re-creates both).
void NetdevSubjects(const Snapshot& snapshot, const SubjectFn& fn);

}  // namespace rdmahd::error_rates
