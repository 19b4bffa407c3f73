// A port's hw counters over RDMA netlink (RDMA_NL_NLDEV, RDMA_NLDEV_CMD_STAT_GET), the request
// behind `rdma statistic show link DEV/PORT`, and the device dump (RDMA_NLDEV_CMD_GET) that maps
// device names to the kernel's indexes: the request builders and the reply parsers. Pure: bytes
// in, bytes or values out (tested and fuzzed); the socket and the index cache are
// collectors/rdma_nl_stats.h.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"

namespace rdmahd {

struct NldevDevice {
  std::uint32_t index = 0;
  std::string name;
};

struct NldevHwCounter {
  std::string name;
  std::uint64_t value = 0;
};

struct NldevPortStats {
  std::uint32_t dev_index = 0;
  std::string dev_name;
  std::uint32_t port = 0;
  std::vector<NldevHwCounter> counters;
};

// RDMA_NLDEV_CMD_GET with NLM_F_DUMP: every RDMA device's index and name.
std::vector<std::uint8_t> BuildNldevGetDumpRequest(std::uint32_t seq);
// RDMA_NLDEV_CMD_STAT_GET for one port.
std::vector<std::uint8_t> BuildNldevStatGetRequest(std::uint32_t dev_index, std::uint32_t port, std::uint32_t seq);

// One datagram of the answer to the dump: appends the devices it describes to `out`. True once the
// dump's NLMSG_DONE has been seen. A kernel error is an Error with its errno.
Result<bool> ParseNldevGetDump(std::span<const std::uint8_t> datagram, std::vector<NldevDevice>& out);
// The answer to a STAT_GET request. `expected_seq` (when non-zero) must match.
Result<NldevPortStats> ParseNldevStatReply(std::span<const std::uint8_t> datagram, std::uint32_t expected_seq = 0);

}  // namespace rdmahd
