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

// A generic netlink message (ethtool, devlink): its netlink header, the command and version of its
// genlmsghdr, and the attributes after that header.
struct GenlMessage {
  nlmsghdr header;
  std::uint8_t cmd = 0;
  std::uint8_t version = 0;
  std::span<const std::uint8_t> attrs;
};

// The genlmsghdr of `m` (which must have at least its 4 bytes) and the attributes after it.
Result<GenlMessage> SplitGenlMessage(const NlMessage& m, std::string_view protocol);

// The answer to one generic netlink request (not a dump): the first message of `datagram`. An
// NLMSG_ERROR with a non-zero code is an Error carrying the kernel's errno ("<protocol>: <what the
// errno says>"); an acknowledgement alone, another message type than `family_id`, another command
// than `expected_cmd`, or (when `expected_seq` is non-zero) another sequence number is malformed.
Result<GenlMessage> GenlReply(std::span<const std::uint8_t> datagram, std::uint16_t family_id,
                              std::uint8_t expected_cmd, std::uint32_t expected_seq, std::string_view protocol);

// One datagram of a generic netlink dump: appends its messages of `family_id` with command
// `expected_cmd` to `out` and returns true once NLMSG_DONE is seen. An NLMSG_ERROR with a non-zero
// code, or an NLMSG_DONE carrying -errno (a dump that failed part-way), is an Error with the
// kernel's errno; any other message type is malformed. `out` keeps the
// messages already appended when an error is returned; their spans point into `datagram`.
Result<bool> GenlDumpMessages(std::span<const std::uint8_t> datagram, std::uint16_t family_id,
                              std::uint8_t expected_cmd, std::string_view protocol, std::vector<GenlMessage>& out);

}  // namespace rdmahd
