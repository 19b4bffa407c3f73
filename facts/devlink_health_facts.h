// Facts of the "devlink_health" collector: the devlink health reporters (fw, fw_fatal, tx, rx, ...)
// of each RDMA device's PCI function, as DEVLINK_CMD_HEALTH_REPORTER_GET dumps them
// (parsers/devlink_health.h). Data only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rdmahd {

enum class DevlinkHealthState { kHealthy, kError, kUnknown };

// One reporter, as parsers/devlink_health.h decodes it.
struct DevlinkHealthReporter {
  std::string bus_name;                     // "pci"
  std::string dev_name;                     // "0000:af:00.0"
  std::optional<std::uint32_t> port_index;  // per-port reporters (mlx5 tx, rx)
  std::string name;                         // "fw", "fw_fatal", "tx", "rx"
  DevlinkHealthState state = DevlinkHealthState::kUnknown;
  std::uint8_t raw_state = 0;               // as sent, for a state newer than the decoder
  std::uint64_t error_count = 0;
  std::uint64_t recover_count = 0;
  std::optional<std::uint64_t> graceful_period_ms;   // reporters that can recover
  std::optional<bool> auto_recover;                  // reporters that can recover
  std::optional<bool> auto_dump;                     // reporters that can dump
  std::optional<std::uint64_t> last_dump_ms_since_boot;    // DUMP_TS: a dump exists
  std::optional<std::uint64_t> last_dump_realtime_ns;      // DUMP_TS_NS (newer kernels)
};

struct DevlinkHealthDeviceFacts {
  std::string device;                      // RDMA device, e.g. mlx5_0
  std::optional<std::string> pci_address;  // "0000:af:00.0"; absent for software devices
  // False when the reporters are unknown (not asked: a capture; the kernel has no devlink; the
  // dump failed): `note` says why. True with no reporters: the driver registers none for it.
  bool read = false;
  std::string note;
  std::vector<DevlinkHealthReporter> reporters;  // the function's and its ports', in dump order
};

struct DevlinkHealthFacts {
  std::vector<DevlinkHealthDeviceFacts> devices;  // by RDMA device name
};

}  // namespace rdmahd
