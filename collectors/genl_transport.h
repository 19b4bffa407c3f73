// Generic netlink (NETLINK_GENERIC) for the devlink and ethtool readers: a family is known by
// name ("devlink", "ethtool") and numbered by the kernel at registration, so its id is asked of
// the controller (CTRL_CMD_GETFAMILY) before the first request and kept.
//
// Layers, as for DCB and RDMA netlink: pure builders and a pure parser of the controller's answer
// (tested on bytes); a GenlTransport (MnlGenlTransport talks to the kernel through a NetlinkSocket,
// tests substitute recorded answers) that readers use for one family each.
#pragma once

#include <linux/netlink.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/netlink_socket.h"
#include "common/result.h"
#include "facts/genl_not_captured.h"

namespace rdmahd {

// One generic netlink request: the netlink header (type `family_id`, `flags`, `seq`), the
// genlmsghdr (`cmd`, `version`), then whatever `attrs` puts (mnl_attr_put_* on the header given).
std::vector<std::uint8_t> BuildGenlRequest(std::uint16_t family_id, std::uint8_t cmd, std::uint8_t version,
                                           std::uint16_t flags, std::uint32_t seq,
                                           const std::function<void(nlmsghdr*)>& attrs = {});

// An ethtool request's header nest (`nest_type`, the command's ETHTOOL_A_*_HEADER) naming the
// netdev `ifname` (ETHTOOL_A_HEADER_DEV_NAME), with ETHTOOL_A_HEADER_FLAGS when `flags` is not 0
// (ETHTOOL_FLAG_STATS asks for statistics).
void PutEthtoolRequestHeader(nlmsghdr* nlh, std::uint16_t nest_type, const std::string& ifname, std::uint32_t flags);

// CTRL_CMD_GETFAMILY for `family` by name.
std::vector<std::uint8_t> BuildGenlFamilyRequest(const std::string& family, std::uint32_t seq);

// The controller's answer: the family's id. ENOENT (the kernel's answer when no such family is
// registered: no devlink in the kernel, no ethtool netlink before 5.6) keeps its errno; a reply
// without CTRL_ATTR_FAMILY_ID, or with one that is not a u16, is malformed (EBADMSG).
Result<std::uint16_t> ParseGenlFamilyReply(std::span<const std::uint8_t> datagram, std::uint32_t expected_seq = 0);

class GenlTransport {
 public:
  virtual ~GenlTransport() = default;
  // The family's id, resolved on first use and kept; an error when the kernel has no such family.
  virtual Result<std::uint16_t> FamilyId() = 0;
  // Sends `request` and returns the answer's datagrams: the single reply of a request, or every
  // datagram of a dump up to and including the one carrying NLMSG_DONE.
  virtual Result<std::vector<std::vector<std::uint8_t>>> Exchange(std::span<const std::uint8_t> request,
                                                                  bool dump) = 0;
};

// One exchange: the request `build` makes with the family's id and the next number of `seq` (never
// 0), and the answer's datagrams (at least one) with the id and number they go with, for the
// reply parsers. Errors: the family's (ENOENT: not registered), the socket's, EPROTO for no answer.
struct GenlAnswer {
  std::vector<std::vector<std::uint8_t>> datagrams;
  std::uint16_t family_id = 0;
  std::uint32_t seq = 0;
};
Result<GenlAnswer> ExchangeGenl(GenlTransport& transport, std::uint32_t& seq, bool dump,
                                const std::function<std::vector<std::uint8_t>(std::uint16_t family_id,
                                                                              std::uint32_t seq)>& build);

// One family over a NetlinkSocket. Not thread-safe (one per collector).
class MnlGenlTransport : public GenlTransport {
 public:
  explicit MnlGenlTransport(std::string family);
  Result<std::uint16_t> FamilyId() override;
  Result<std::vector<std::vector<std::uint8_t>>> Exchange(std::span<const std::uint8_t> request, bool dump) override;

 private:
  std::string family_;
  NetlinkSocket socket_;
  std::optional<std::uint16_t> id_;
  std::uint32_t seq_ = 0;
};

}  // namespace rdmahd
