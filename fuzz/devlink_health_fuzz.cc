// libFuzzer target: the devlink health reporter decoder, as one reply and as one datagram of a
// dump. The family id comes from the input's own netlink header.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "parsers/devlink_health.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::uint16_t family = 0;
  if (size >= 6) std::memcpy(&family, data + 4, sizeof(family));  // nlmsghdr.nlmsg_type
  const std::span<const std::uint8_t> bytes(data, size);
  if (auto r = rdmahd::ParseDevlinkHealthReporterReply(bytes, family); r.ok()) {
    (void)rdmahd::DevlinkHealthStateName(r->state);
  }
  std::vector<rdmahd::DevlinkHealthReporter> reporters;
  (void)rdmahd::ParseDevlinkHealthReporterDump(bytes, family, reporters);
  return 0;
}
