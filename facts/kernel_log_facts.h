// Facts of the "kernel_log" collector: NIC health events the kernel logged about the node's RDMA
// devices (mlx5 firmware health, thermal and module events, command failures, PCIe AER, ...), read
// from /dev/kmsg and classified by parsers/kernel_event_rules. Counts are since the daemon started
// reading (with a bounded look-back at start); recent events are kept for the nic_health check's
// sticky window. Data only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "parsers/kernel_event_rules.h"

namespace rdmahd {

struct KernelEventCount {
  std::uint64_t count = 0;
  std::int64_t last_seen_unix_s = 0;  // wall clock of the last one
};

struct KernelLogDeviceFacts {
  std::string device;  // the RDMA device the events are about (by PCI address, netdev or name)
  // (event name, severity name) -> count and last time
  std::map<std::pair<std::string, std::string>, KernelEventCount> counts;
  // The most recent events, oldest first, at most KernelLogFacts::kRecentPerDevice; `realtime_s`
  // set (the record's time on the wall clock).
  std::vector<KernelEvent> recent;
};

struct KernelLogFacts {
  static constexpr std::size_t kRecentPerDevice = 32;

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
};

}  // namespace rdmahd
