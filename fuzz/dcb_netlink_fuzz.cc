// libFuzzer target: the DCB netlink reply parser must reject anything malformed with an Error and
// never read outside the input (run under AddressSanitizer).
#include <cstddef>
#include <cstdint>
#include <span>

#include "collectors/dcb_netlink.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::span<const std::uint8_t> bytes(data, size);
  auto state = rdmahd::ParseDcbIeeeReply(bytes, 0);
  if (state.ok()) {
    auto map = rdmahd::DscpPriorityMap(*state);
    if (state->pfc) (void)state->pfc->Enabled(static_cast<int>(map.size() % 8));
  }
  // The sequence-number check runs before any attribute parsing; exercise it too.
  (void)rdmahd::ParseDcbIeeeReply(bytes, 7);
  return 0;
}
