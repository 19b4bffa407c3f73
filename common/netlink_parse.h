// Bounds-checked reading of netlink replies, shared by the DCB (rtnetlink) and RDMA (nldev)
// readers. Every header and payload is checked against the end of the buffer before use, and
// headers are copied out, so neither truncation nor alignment of the input can make a read go
// outside it. Errors are EBADMSG and start with "<protocol> reply malformed: ".
#pragma once

#include <linux/netlink.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "common/result.h"

namespace rdmahd {

struct NlAttr {
  std::uint16_t type;  // NLA_TYPE_MASK applied
  std::span<const std::uint8_t> payload;
};

struct NlMessage {
  nlmsghdr header;
  std::span<const std::uint8_t> body;  // after the netlink header
};

Error NlMalformed(std::string_view protocol, std::string_view what);

// Splits `bytes` into attributes; `where` names the attribute block in errors.
Result<std::vector<NlAttr>> SplitNlAttrs(std::span<const std::uint8_t> bytes, std::string_view protocol,
                                         std::string_view where);

// Splits one datagram into its messages.
Result<std::vector<NlMessage>> SplitNlMessages(std::span<const std::uint8_t> datagram, std::string_view protocol);

// The fixed-size payload of `attr` (an integer or a kernel struct), copied out. `what` names the
// attribute and `type` the C type in the error: "<what> has N bytes, <type> needs M".
template <typename T>
Result<T> NlAttrAs(const NlAttr& attr, std::string_view protocol, std::string_view what, std::string_view type) {
  static_assert(std::is_trivially_copyable_v<T>);
  if (attr.payload.size() < sizeof(T)) {
    return NlMalformed(protocol, std::string(what) + " has " + std::to_string(attr.payload.size()) + " bytes, " +
                                     std::string(type) + " needs " + std::to_string(sizeof(T)));
  }
  T value;
  std::memcpy(&value, attr.payload.data(), sizeof(T));
  return value;
}

// The errno of an NLMSG_ERROR body (0 for an acknowledgement).
Result<int> NlErrorCode(std::span<const std::uint8_t> body, std::string_view protocol);

}  // namespace rdmahd
