// libFuzzer target: the sysfs and procfs attribute parsers (parsers/ib_sysfs_parse.h,
// parsers/host_dev_parse.h) on the same bytes, as the collectors feed them a file's content (a
// PCI config space dump is bytes too). Besides "no crash": whatever parses stays within the bounds
// the headers promise.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "parsers/host_dev_parse.h"
#include "parsers/ib_sysfs_parse.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  using namespace rdmahd;

  if (auto e = ParseSysfsEnum(text); e && e->name.empty()) __builtin_trap();
  (void)ParseIbRateBytesPerSecond(text);
  (void)ParseGidType(text);
  (void)ParseSysfsIndex(text);
  (void)IsZeroGid(text);
  (void)IsNotAvailableValue(text);

  if (auto speed = ParsePcieLinkSpeed(text); speed.ok() && !(*speed > 0 && *speed <= 128)) __builtin_trap();
  if (auto width = ParsePcieLinkWidth(text); width.ok() && (*width == 0 || *width > 32)) __builtin_trap();
  if (auto ctl = ParsePcieDeviceControl(text); ctl.ok()) {
    for (std::uint32_t bytes : {ctl->max_read_request_bytes, ctl->max_payload_bytes}) {
      if (bytes < 128 || bytes > 4096 || (bytes & (bytes - 1)) != 0) __builtin_trap();
    }
  }
  if (auto tos = ParseRoceTos(text); tos.ok() && *tos > 255) __builtin_trap();
  if (auto tc = ParseTrafficClass(text); tc.ok() && *tc && **tc > 255) __builtin_trap();
  const IommuCmdline iommu = ParseIommuCmdline(text);
  if (iommu.mode != "off" && iommu.mode != "passthrough" && iommu.mode != "translated" && iommu.mode != "default") {
    __builtin_trap();
  }
  return 0;
}
