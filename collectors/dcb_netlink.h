// DCB netlink (RTM_GETDCB / DCB_CMD_IEEE_GET): the kernel's view of a netdev's PFC, APP table, APP
// trust order and DCBX mode. Reading needs no privilege.
//
// Split in three so the parsing is testable and fuzzable without a kernel:
//  - BuildDcbIeeeGetRequest / ParseDcbIeeeReply: pure functions over bytes;
//  - DcbNetlinkTransport: sends one request and returns the reply datagram (MnlDcbTransport talks
//    to the kernel through libmnl; tests substitute recorded replies);
//  - DcbNetlinkReader: request -> transport -> parse.
//
// One IEEE_GET answer carries everything needed: the IEEE nest (PFC, APP table, trust table) and
// DCB_ATTR_DCBX, so DCB_CMD_GDCBX is not sent separately.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "facts/dcb_state.h"
#include "common/netlink_socket.h"
#include "common/result.h"

namespace rdmahd {

// A complete RTM_GETDCB request (nlmsghdr + dcbmsg{DCB_CMD_IEEE_GET} + DCB_ATTR_IFNAME).
std::vector<std::uint8_t> BuildDcbIeeeGetRequest(const std::string& ifname, std::uint32_t seq);

// Parses the kernel's reply datagram to a DCB_CMD_IEEE_GET request: one RTM_GETDCB message, or an
// NLMSG_ERROR. EOPNOTSUPP (the netdev has no dcbnl_ops: veth, rxe, most virtual devices) yields a
// DcbState with supported=false. Any other kernel error, or bytes that do not form a well-formed
// message (truncated, attribute lengths past the end, a PFC/APP payload of the wrong size), is an
// Error saying what was wrong; nothing outside `reply` is ever read.
// `expected_seq` (when non-zero) must match the reply's sequence number.
Result<DcbState> ParseDcbIeeeReply(std::span<const std::uint8_t> reply, std::uint32_t expected_seq = 0);

class DcbNetlinkTransport {
 public:
  virtual ~DcbNetlinkTransport() = default;
  // Sends `request` and returns the bytes of the kernel's answer (one datagram).
  virtual Result<std::vector<std::uint8_t>> Exchange(std::span<const std::uint8_t> request) = 0;
};

// NETLINK_ROUTE through a NetlinkSocket (common/netlink_socket.h).
class MnlDcbTransport : public DcbNetlinkTransport {
 public:
  MnlDcbTransport();
  Result<std::vector<std::uint8_t>> Exchange(std::span<const std::uint8_t> request) override;

 private:
  NetlinkSocket socket_;
};

class DcbNetlinkReader {
 public:
  explicit DcbNetlinkReader(std::unique_ptr<DcbNetlinkTransport> transport);
  // The netdev's DCB state; errors name the netdev.
  Result<DcbState> Read(const std::string& ifname);

 private:
  std::unique_ptr<DcbNetlinkTransport> transport_;
  std::uint32_t seq_ = 0;
};

}  // namespace rdmahd
