// A port's hw counters over RDMA netlink (RDMA_NL_NLDEV, RDMA_NLDEV_CMD_STAT_GET): the request
// behind `rdma statistic show link DEV/PORT`. It returns the same values as the files in
// /sys/class/infiniband/DEV/ports/PORT/hw_counters/ (the port's counters plus those of any bound
// per-QP counters), in one round trip per port instead of one read per counter. No privilege needed.
//
// Layers, as for DCB netlink: pure request builders and reply parsers over bytes
// (parsers/rdma_nl_stats.h); an RdmaNetlinkTransport (MnlRdmaTransport talks to the kernel through
// libmnl, tests substitute recorded answers); RdmaNetlinkStats on top, which also maps device names
// to the kernel's device indexes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/netlink_socket.h"
#include "common/result.h"
#include "parsers/rdma_nl_stats.h"

namespace rdmahd {

class RdmaNetlinkTransport {
 public:
  virtual ~RdmaNetlinkTransport() = default;
  // Sends `request` and returns the answer's datagrams: the single reply of a request, or every
  // datagram of a dump up to and including the one carrying NLMSG_DONE.
  virtual Result<std::vector<std::vector<std::uint8_t>>> Exchange(std::span<const std::uint8_t> request,
                                                                  bool dump) = 0;
};

// NETLINK_RDMA through a NetlinkSocket (common/netlink_socket.h). A kernel without RDMA netlink
// fails to open it (EPROTONOSUPPORT).
class MnlRdmaTransport : public RdmaNetlinkTransport {
 public:
  MnlRdmaTransport();
  Result<std::vector<std::vector<std::uint8_t>>> Exchange(std::span<const std::uint8_t> request, bool dump) override;

 private:
  NetlinkSocket socket_;
};

// Hw counters of a port by device name. Not thread-safe (one per collector).
class RdmaNetlinkStats {
 public:
  explicit RdmaNetlinkStats(std::unique_ptr<RdmaNetlinkTransport> transport);
  // The port's hw counters. Errors name the device and port; ENODEV when the kernel does not know
  // the device (any more).
  Result<std::vector<NldevHwCounter>> PortCounters(const std::string& device, std::uint32_t port);

 private:
  Status RefreshIndexes();
  std::uint32_t NextSeq();
  std::unique_ptr<RdmaNetlinkTransport> transport_;
  std::map<std::string, std::uint32_t> index_of_;  // from the last dump
  std::uint32_t seq_ = 0;
};

}  // namespace rdmahd
