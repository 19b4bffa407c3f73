// libFuzzer target: the ETHTOOL_MSG_FEC_GET reply decoder (active mode, statistics arrays) and the
// pre-FEC BER estimate over whatever it decoded. The family id comes from the input's own header.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "parsers/ethtool_fec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::uint16_t family = 0;
  if (size >= 6) std::memcpy(&family, data + 4, sizeof(family));  // nlmsghdr.nlmsg_type
  if (auto fec = rdmahd::ParseEthtoolFecReply(std::span<const std::uint8_t>(data, size), family); fec.ok()) {
    if (fec->corrected_bits.total) (void)rdmahd::EstimatePreFecBer(*fec->corrected_bits.total, 1.0, 100e9);
    if (fec->active) (void)rdmahd::FecModeName(*fec->active);
  }
  return 0;
}
