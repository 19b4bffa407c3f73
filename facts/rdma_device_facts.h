// Facts of the "devices" collector (collectors/rdma_devices.h): each RDMA device's identity and
// each port as one fact: what the Topology discovered about it (core/topology.h: link layer, GIDs,
// netdev) with its state, rate and counters, so consumers take the port whole. Data only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/topology.h"
#include "facts/named_values.h"

namespace rdmahd {

// sysfs prints IB enums as "<id>: <name>": ports/P/state "4: ACTIVE", phys_state "5: LinkUp",
// node_type "1: CA".
struct SysfsEnumValue {
  std::uint32_t id = 0;
  std::string name;

  bool operator==(const SysfsEnumValue&) const = default;
};

// IB port state ids (IBTA PortInfo PortState) and physical state ids (PortPhysicalState) that
// checks compare against.
inline constexpr std::uint32_t kPortStateActive = 4;
inline constexpr std::uint32_t kPhysStateLinkUp = 5;

// The values of one counter directory (ports/P/counters/, counters_ext/ or hw_counters/) at one
// collection: the file names are listed once, when the device is discovered; a value is nullopt
// when the file was missing, "N/A (no PMA)" or unreadable.
using CounterValues = NamedValues<std::uint64_t>;

// A file whose reads fail in a way that does not pass by itself (EINVAL, EIO, EOPNOTSUPP, EPERM):
// read again with backoff (collectors/device_reader.h, ReadBackoff), its value absent meanwhile.
struct BackedOffRead {
  std::string file;         // relative to the port's folder: "counters/symbol_error", "rate"
  std::string errno_name;   // "EINVAL", "EIO", "EOPNOTSUPP", "EPERM"

  bool operator==(const BackedOffRead&) const = default;
};

// One port, all it is in this collection: its Topology part (number, link layer, netdev, GIDs) and
// what the devices collector read (state, rate, counters).
struct RdmaPortFacts : TopologyPort {
  std::string device;
  std::optional<SysfsEnumValue> state;       // ports/P/state, e.g. {4, "ACTIVE"}
  std::optional<SysfsEnumValue> phys_state;  // ports/P/phys_state, e.g. {5, "LinkUp"}
  std::optional<std::uint64_t> rate_bytes_per_second;  // ports/P/rate
  // Raw values by file name; a file that is missing, "N/A (no PMA)" or unreadable is absent.
  CounterValues counters;       // ports/P/counters/ (port_*_data in 4-byte words)
  CounterValues counters_ext;   // ports/P/counters_ext/ (mlx4 64-bit)
  CounterValues hw_counters;    // ports/P/hw_counters/
  // The port's files in read backoff: why their values (and what checks derive from them) are
  // absent. Empty on a healthy port.
  std::vector<BackedOffRead> read_backoff;
  // The port's counter files whose text is not a counter value (not a whole number from 0 to
  // 2^64-1: "13abc", "-1", 60 KB of digits) or that could not be read at all (over the read cap,
  // a dangling link; not those in read backoff), by their name in the port's folder
  // ("hw_counters/out_of_buffer"): their values are absent, and a check that needs one says
  // unknown naming it. Empty on a healthy port.
  std::vector<std::string> unparseable;

  std::string Subject() const { return device + "/" + std::to_string(port); }  // "mlx5_0/1"
};

struct RdmaDeviceFacts {
  std::string name;  // e.g. mlx5_0
  std::optional<std::string> fw_ver, board_id, hca_type, node_guid, sys_image_guid;
  std::optional<std::string> node_type;  // as printed, e.g. "1: CA"
  std::vector<RdmaPortFacts> ports;      // the Topology's ports of the device, by port number
  // Why the device's ports could not be listed (TopologyDevice::ports_unreadable); `ports` is then
  // empty though the device has ports.
  std::optional<std::string> ports_unreadable;
  // Files of the device (its own and its ports') in read backoff now, and the failed reads so far
  // of the device object by errno name (only errnos that failed), for rdma_read_* metrics.
  std::size_t read_backoff_files = 0;
  std::vector<std::pair<std::string, std::uint64_t>> read_errors;
};

struct RdmaDevicesFacts {
  std::vector<RdmaDeviceFacts> devices;  // the Topology's devices that could be read, by name
};

}  // namespace rdmahd
