// libFuzzer target: the module EEPROM decoder, on the input as a flat ioctl dump and on the input
// cut into pages of any length (the first 7 bytes give each page's length, 0 to 383), so short and
// odd-sized pages reach every field read.
#include <cstddef>
#include <cstdint>
#include <span>

#include "parsers/module_eeprom.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> bytes(data, size);
  if (auto pages = rdmahd::SplitModuleEepromDump(bytes); pages.ok()) (void)rdmahd::DecodeModuleEeprom(*pages);

  if (size < 7) return 0;
  std::span<const std::uint8_t> rest = bytes.subspan(7);
  std::span<const std::uint8_t> cut[7];
  for (int i = 0; i < 7; ++i) {
    const std::size_t want = static_cast<std::size_t>(data[i]) + (data[i] >= 128 ? 128 : 0);  // 0..383
    const std::size_t n = want < rest.size() ? want : rest.size();
    cut[i] = rest.subspan(0, n);
    rest = rest.subspan(n);
  }
  rdmahd::ModuleEepromPages pages{cut[0], cut[1], cut[2], cut[3], cut[4], cut[5], cut[6]};
  if (auto m = rdmahd::DecodeModuleEeprom(pages); m.ok()) {
    for (const auto& lane : m->lanes) {
      if (lane.rx_power_mw) (void)rdmahd::MilliwattsToDbm(*lane.rx_power_mw);
    }
  }
  return 0;
}
