// The "link_flaps" check: the link history of every RDMA port, from the History (core/history.h).
// The kernel keeps no link history, only counters, so the check records, once per collection and
// from facts already collected (the devices collector's ports/P/state and counters/link_downed, the
// netdev collector's carrier_changes), three series per port, and replays them:
//  - a port seen leaving ACTIVE gets a down_since time; when it is seen ACTIVE again within
//    host.link_flaps.drop_window that is one flap, later it was a drop;
//  - counters/link_downed and the netdev's carrier_changes (two per down/up cycle) growing between
//    two collections that both saw the port ACTIVE are flaps no collection saw: max(link_downed
//    growth, ceil(carrier_changes growth / 2)) of them (a re-created device or a counter reset
//    starts a new baseline: no growth);
//  - `threshold` flaps within `window` make the port flapping; a port down longer than
//    drop_window (after having been ACTIVE at least once in its history: a port that was never up
//    is port_active's business) is a dropped link; both stay set until `recovery` has passed
//    without a new flap, or since the dropped port came back.
// A port that disappears (device removed) counts as down; back within drop_window it flapped; its
// history is forgotten once drop_window plus recovery have passed. Counters since boot are not
// flaps: history starts with the daemon. The history holds each series' changes (a port that
// flaps constantly keeps its last History::Limits::max_samples / 2 flaps).
//
// The check runs while the "link_flaps" collector is enabled; it publishes LinkFlapFacts, which
// that collector renders (rdma_port_flapping, ...).
#pragma once

#include <chrono>
#include <deque>
#include <optional>
#include <vector>

#include "config/config.h"
#include "core/check.h"
#include "facts/link_flap_facts.h"

namespace rdmahd {

// The flap policy over one port's timeline (pure: tests drive it with synthetic timelines).
struct LinkFlapPolicy {
  // One port's observation at one collection.
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
  // Advances `h` by `o` at `now` and fills `out`'s derived fields.
  static void Observe(PortHistory& h, const Observation& o, TimePoint now, const HostLinkFlapPolicy& policy,
                      LinkFlapPortFacts& out);
};

// The verdicts for derived facts: one per port.
void AppendLinkFlapVerdicts(const LinkFlapFacts& facts, std::vector<CheckResult>& out);

}  // namespace rdmahd
