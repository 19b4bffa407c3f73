// Facts of the "kernel_log" collector: NIC health events the kernel logged about the node's RDMA
// devices (mlx5 firmware health, thermal and module events, command failures, PCIe AER, ...), read
// from /dev/kmsg and classified by parsers/kernel_event_rules. Counts are since the daemon started
// reading (with a bounded look-back at start). For the nic_health check's sticky window each kind
// of event keeps its current run (count, first and last event), so no flood of one kind can push
// another kind out of what is judged; memory is bounded by the number of rules, whatever the
// number of lines. Data only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "facts/kernel_event.h"

namespace rdmahd {

// One kind of event (a rule's name at one severity) about one device.
struct KernelEventCount {
  std::uint64_t count = 0;            // since the daemon started reading (the metric)
  std::int64_t last_seen_unix_s = 0;  // wall clock of the last one
  // The current run: the events of this kind since it was last quiet for a whole
  // KernelLogFacts::kWindowSeconds (a later event after such a gap starts a new run). `first` and
  // `last` have `realtime_s` set; `first_order` and `last_order` are their places in the log (the
  // order records were read in), which orders the kinds of an incident.
  std::uint64_t run_count = 0;
  KernelEvent first, last;
  std::uint64_t first_order = 0, last_order = 0;
};

struct KernelLogDeviceFacts {
  std::string device;  // the RDMA device the events are about (by PCI address, netdev or name)
  // (event name, severity name) -> count, last time and current run; at most one entry per rule
  // and severity.
  std::map<std::pair<std::string, std::string>, KernelEventCount> counts;
  // The most recent warning and critical events, oldest first, at most
  // KernelLogFacts::kRecentPerDevice (info events are only counted: a flood of them evicts
  // nothing); `realtime_s` set. For per-event detail (link_flaps counts link-down lines per netdev).
  std::vector<KernelEvent> recent;
};

struct KernelLogFacts {
  static constexpr std::size_t kRecentPerDevice = 32;
  // How long an event stays judged (nic_health's sticky window), and the quiet gap that ends a run.
  static constexpr std::int64_t kWindowSeconds = 24 * 3600;

  // False when the log could not be read (no /dev/kmsg, EPERM without CAP_SYSLOG while
  // kernel.dmesg_restrict=1, a captured tree): `unreadable` says why and nothing below is known.
  bool readable = false;
  std::string unreadable;
  std::string source;             // "/dev/kmsg"
  std::int64_t now_unix_s = 0;    // when this collection read the log
  std::vector<KernelLogDeviceFacts> devices;  // by device name; only devices with events
  std::uint64_t records = 0;         // records read since start
  std::uint64_t overruns = 0;        // times the ring overwrote records before they were read (EPIPE)
  std::uint64_t unmatched_events = 0;  // events about a device that is no RDMA device of this node
  // False while records are known to be waiting unread: the live stream's last read was not its
  // end (the record cap or the time budget stopped it), or a saved log is not read to its end yet.
  // Nothing unread is judged: nic_health is unknown then (failed when a critical event was read).
  bool caught_up = false;
  // A saved log: bytes read and its size (the progress a reason gives while not caught up).
  std::optional<std::uint64_t> bytes_read, bytes_total;
};

}  // namespace rdmahd
