// The "link_flaps" collector (facts/link_flap_facts.h). The kernel keeps no link history, only
// counters, so this collector keeps one per port across collections:
//  - a port seen leaving ACTIVE gets a down_since time; when it is seen ACTIVE again within
//    host.link_flaps.drop_window that is one flap, later it was a drop;
//  - counters/link_downed and the netdev's carrier_changes (two per down/up cycle) growing between
//    two collections that both saw the port ACTIVE are flaps no collection saw: max(link_downed
//    growth, ceil(carrier_changes growth / 2)) of them;
//  - `threshold` flaps within `window` make the port flapping; a port down longer than
//    drop_window (after having been ACTIVE at least once since the daemon started: a port that was
//    never up is port_active's business) is a dropped link; both stay set until `recovery` has
//    passed without a new flap, or since the dropped port came back.
// A port that disappears (device removed) counts as down but is not exported; back within
// drop_window it flapped; its history is forgotten once drop_window plus recovery have passed. Counters since boot are not flaps: history starts with the daemon.
// Files read on every collection (state, link_downed, carrier_changes) are held open, each port's
// three kept with the port (no path is built or looked up on a steady-state collection) and opened
// afresh when the device is re-created or the port's netdev changes.
#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "core/collector.h"
#include "collectors/rdma_netdevs.h"
#include "facts/link_flap_facts.h"

namespace rdmahd {

class LinkFlapCollector : public Collector {
 public:
  explicit LinkFlapCollector(SteadyNow now = std::chrono::steady_clock::now);
  Status Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& outcome) override;
  void Render(const Snapshot& snapshot, MetricSink& sink) const override;

  // One port's observation at one collection, and what the history makes of it (pure: tests
  // drive it with synthetic timelines).
  struct Observation {
    std::optional<bool> active;  // absent: state unreadable (history unchanged)
    std::optional<std::uint64_t> link_downed, carrier_changes;
    bool listed = true;          // false: the port is gone from sysfs
  };
  using TimePoint = std::chrono::steady_clock::time_point;
  struct PortHistory {
    std::optional<bool> last_active;
    bool ever_active = false;
    std::optional<TimePoint> down_since;
    std::optional<std::uint64_t> link_downed, carrier_changes;
    std::deque<TimePoint> flaps;           // within the window
    std::optional<TimePoint> last_flap;
    std::optional<TimePoint> flapping_until;
    std::optional<TimePoint> drop_ended;    // a dropped port came back then
  };
  static void Observe(PortHistory& h, const Observation& o, TimePoint now, const HostLinkFlapPolicy& policy,
                      LinkFlapPortFacts& out);

 private:
  // One port's held files, for the device generation and netdev they were opened for.
  struct PortFiles {
    std::uint64_t generation = 0;
    std::string netdev;
    std::optional<HeldFile> state, link_downed, carrier_changes;  // carrier_changes: none without a netdev
  };
  struct Port {
    PortHistory history;
    std::optional<PortFiles> files;  // nullopt while the port is not listed
  };

  SteadyNow now_;
  std::string read_buf_;
  std::map<std::pair<std::string, std::uint32_t>, Port> ports_;
};

}  // namespace rdmahd
