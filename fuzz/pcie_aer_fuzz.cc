// libFuzzer target: the aer_dev_* sysfs file parser, for each severity, and the old-name mapping of
// every counter name it accepts. Run under AddressSanitizer: no read outside the input, no crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "parsers/pcie_aer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (auto severity : {rdmahd::AerSeverity::kCorrectable, rdmahd::AerSeverity::kNonFatal, rdmahd::AerSeverity::kFatal}) {
    if (auto counts = rdmahd::ParseAerDevFile(text, severity); counts.ok()) {
      for (const auto& c : counts->counters) (void)rdmahd::CanonicalAerErrorName(c.name);
    }
  }
  return 0;
}
