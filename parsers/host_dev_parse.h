// Pure parsers for the device side of host readiness: PCIe link attributes,
// the PCIe capability in a PCI config space dump, RoCE ToS files and the IOMMU options
// of the kernel command line. Text in, values or an Error naming what was wrong out; nothing here
// reads a file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace rdmahd {

// current_link_speed / max_link_speed: "8.0 GT/s PCIe" (kernels >= 4.17), "8 GT/s", "2.5 GT/s"
// -> GT/s. "Unknown" (a VF, a link that never trained) and anything else are errors.
Result<double> ParsePcieLinkSpeed(std::string_view text);

// current_link_width / max_link_width: "16" (sysfs prints the lane count; "x16" accepted too) ->
// lanes. 0 (the kernel's value for a link it cannot read), 255 and junk are errors.
Result<std::uint32_t> ParsePcieLinkWidth(std::string_view text);

// From a PCI config space dump (the `config` file): the PCI Express capability's Device Control
// register. Non-root readers get only the first 64 bytes of the file, which never hold a
// capability: that is an error saying so (EACCES), as is a dump with no PCIe capability or a
// broken capability list.
struct PcieDeviceControl {
  std::uint32_t max_read_request_bytes = 0;  // 128 << DevCtl[14:12]
  std::uint32_t max_payload_bytes = 0;       // 128 << DevCtl[7:5]
};
Result<PcieDeviceControl> ParsePcieDeviceControl(std::string_view config);

// rdma_cm's configfs default_roce_tos: a decimal 0..255.
Result<std::uint32_t> ParseRoceTos(std::string_view text);

// mlx5's tc/N/traffic_class: "Global tclass=106" (as the driver prints it), or a bare number.
// A negative value ("Global tclass=-1") means no override: returns nullopt. Junk is an error.
Result<std::optional<std::uint32_t>> ParseTrafficClass(std::string_view text);

// The IOMMU options of /proc/cmdline and what they make of the IOMMU:
// intel_iommu=, amd_iommu=, iommu=, iommu.passthrough=, iommu.strict=.
struct IommuCmdline {
  std::string options;  // the IOMMU options as written, space-separated (empty: none)
  std::string mode;     // "off", "passthrough", "translated" or "default"
};
IommuCmdline ParseIommuCmdline(std::string_view cmdline);

}  // namespace rdmahd
