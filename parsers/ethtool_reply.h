// The parts every ethtool netlink reply shares (Documentation/networking/ethtool-netlink.rst):
// the request header nest (ETHTOOL_A_HEADER_*) naming the device the answer is about. The message
// itself is found with GenlReply (common/netlink_parse.h) and the family id the caller resolved.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "common/result.h"

namespace rdmahd {

// A netdev name is at most IFNAMSIZ - 1 bytes; an attribute holding more is not one.
inline constexpr std::size_t kEthtoolMaxIfnameBytes = 15;

struct EthtoolReplyHeader {
  std::uint32_t ifindex = 0;  // 0 when the header has none
  std::string ifname;         // empty when the header has none; bytes as the kernel sent them
};

// Decodes an ETHTOOL_A_*_HEADER nest. Malformed (EBADMSG, "<protocol> reply malformed: ..."): an
// attribute overrunning the nest, a DEV_INDEX that is not a u32, a DEV_NAME longer than
// kEthtoolMaxIfnameBytes (before its NUL). Unknown attributes are skipped.
Result<EthtoolReplyHeader> ParseEthtoolReplyHeader(std::span<const std::uint8_t> nest, std::string_view protocol);

}  // namespace rdmahd
