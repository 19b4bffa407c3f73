// Facts the "link_flaps" check derives from the History and publishes for the "link_flaps"
// collector to render: per RDMA port, its link history across collections (the kernel keeps none):
// when the port left ACTIVE, whether it came back within the drop window (a flap) or stayed down
// past it (a drop), and the flaps seen in the counting window. Counter growth between two
// collections (counters/link_downed, the netdev's carrier_changes) with the port ACTIVE at both ends
// is a flap no collection saw happen. The kernel log's link-down lines for the port are kept beside
// them as a cross-check. Data only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rdmahd {

struct LinkFlapPortFacts {
  std::string device;
  std::uint32_t port = 0;
  std::string netdev;                           // empty for InfiniBand or when unknown
  std::optional<bool> active;                   // ports/P/state is ACTIVE; absent: unreadable
  std::optional<std::uint64_t> link_downed;     // counters/link_downed
  std::optional<std::uint64_t> carrier_changes;  // /sys/class/net/<netdev>/carrier_changes
  std::string note;                             // why `active` is absent

  std::optional<double> down_for_seconds;       // while the port is not ACTIVE (since seen down)
  std::uint32_t flaps_in_window = 0;            // flaps within host.link_flaps.window
  std::optional<double> last_flap_age_seconds;  // since the last flap, if one was seen
  std::optional<double> last_drop_age_seconds;  // since a drop ended (the port came back), if one was seen
  bool flapping = false;      // flaps_in_window >= threshold, or within recovery after that
  bool link_dropped = false;  // down longer than drop_window now, or within recovery after coming back

  // The kernel log's word on it (collector kernel_log; absent when the log is not read): link-down
  // lines about the port's netdev (or, without one, its device) within the counting window.
  std::uint32_t kernel_link_downs = 0;
  std::optional<double> kernel_last_link_down_age_seconds;
};

struct LinkFlapFacts {
  std::vector<LinkFlapPortFacts> ports;  // by (device, port)
  double drop_window_seconds = 0;        // the policy the flags were computed with
  double window_seconds = 0;
  double recovery_seconds = 0;
  std::uint32_t threshold = 0;
};

}  // namespace rdmahd
