// libFuzzer target: the RDMA netlink reply parsers (port statistics, device dump) must reject
// anything malformed with an Error and never read outside the input (run under AddressSanitizer).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "parsers/rdma_nl_stats.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::span<const std::uint8_t> bytes(data, size);
  if (auto stats = rdmahd::ParseNldevStatReply(bytes, 0); stats.ok()) {
    for (const auto& c : stats->counters) (void)c.name.size();
  }
  std::vector<rdmahd::NldevDevice> devices;
  (void)rdmahd::ParseNldevGetDump(bytes, devices);
  return 0;
}
