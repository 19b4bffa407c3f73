// Facts of the "devlink_health" collector: the devlink health reporters (fw, fw_fatal, tx, rx, ...)
// of each RDMA device's PCI function, as DEVLINK_CMD_HEALTH_REPORTER_GET dumps them
// (parsers/devlink_health.h). Data only.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "parsers/devlink_health.h"

namespace rdmahd {

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
