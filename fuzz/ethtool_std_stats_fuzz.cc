// libFuzzer target: the ETHTOOL_MSG_STATS_GET reply decoder. The family id is taken from the
// input's own netlink header so the decoder goes past the first check into the nested groups.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "parsers/ethtool_std_stats.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::uint16_t family = 0;
  if (size >= 6) std::memcpy(&family, data + 4, sizeof(family));  // nlmsghdr.nlmsg_type
  if (auto stats = rdmahd::ParseEthtoolStatsReply(std::span<const std::uint8_t>(data, size), family); stats.ok()) {
    for (const auto& c : stats->counters) (void)stats->Find(c.name);
  }
  return 0;
}
