#include "common/netlink_parse.h"

#include <linux/genetlink.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace rdmahd {

Error NlMalformed(std::string_view protocol, std::string_view what) {
  return Error{std::string(protocol) + " reply malformed: " + std::string(what), EBADMSG};
}

Result<std::vector<NlAttr>> SplitNlAttrs(std::span<const std::uint8_t> bytes, std::string_view protocol,
                                         std::string_view where) {
  std::vector<NlAttr> out;
  std::size_t off = 0;
  while (off < bytes.size()) {
    const std::size_t left = bytes.size() - off;
    if (left < sizeof(nlattr)) {
      return NlMalformed(protocol, std::string(where) + ": truncated attribute header (" + std::to_string(left) +
                                       " bytes left)");
    }
    nlattr hdr;
    std::memcpy(&hdr, bytes.data() + off, sizeof(hdr));
    if (hdr.nla_len < NLA_HDRLEN) {
      return NlMalformed(protocol, std::string(where) + ": attribute length " + std::to_string(hdr.nla_len) +
                                       " shorter than its header");
    }
    if (hdr.nla_len > left) {
      return NlMalformed(protocol, std::string(where) + ": attribute type " +
                                       std::to_string(hdr.nla_type & NLA_TYPE_MASK) + " claims " +
                                       std::to_string(hdr.nla_len) + " bytes, only " + std::to_string(left) +
                                       " left");
    }
    out.push_back({static_cast<std::uint16_t>(hdr.nla_type & NLA_TYPE_MASK),
                   bytes.subspan(off + NLA_HDRLEN, hdr.nla_len - NLA_HDRLEN)});
    // The last attribute of a message may omit its alignment padding.
    off += std::min<std::size_t>(NLA_ALIGN(hdr.nla_len), left);
  }
  return out;
}

Result<std::vector<NlMessage>> SplitNlMessages(std::span<const std::uint8_t> datagram, std::string_view protocol) {
  std::vector<NlMessage> out;
  std::size_t off = 0;
  if (datagram.empty()) {
    return NlMalformed(protocol, "truncated: 0 bytes, a netlink header needs " + std::to_string(sizeof(nlmsghdr)));
  }
  while (off < datagram.size()) {
    const std::size_t left = datagram.size() - off;
    if (left < sizeof(nlmsghdr)) {
      return NlMalformed(protocol, "truncated: " + std::to_string(left) + " bytes, a netlink header needs " +
                                       std::to_string(sizeof(nlmsghdr)));
    }
    nlmsghdr hdr;
    std::memcpy(&hdr, datagram.data() + off, sizeof(hdr));
    if (hdr.nlmsg_len < sizeof(nlmsghdr)) {
      return NlMalformed(protocol, "message length " + std::to_string(hdr.nlmsg_len) + " shorter than its header");
    }
    if (hdr.nlmsg_len > left) {
      return NlMalformed(protocol, "truncated: message claims " + std::to_string(hdr.nlmsg_len) + " bytes, got " +
                                       std::to_string(left));
    }
    out.push_back({hdr, datagram.subspan(off + NLMSG_HDRLEN, hdr.nlmsg_len - NLMSG_HDRLEN)});
    off += std::min<std::size_t>(NLMSG_ALIGN(hdr.nlmsg_len), left);
  }
  return out;
}

Result<int> NlErrorCode(std::span<const std::uint8_t> body, std::string_view protocol) {
  int neg_errno = 0;
  if (body.size() < sizeof(neg_errno)) return NlMalformed(protocol, "truncated NLMSG_ERROR");
  std::memcpy(&neg_errno, body.data(), sizeof(neg_errno));
  // The kernel sends -errno (MAX_ERRNO is 4095); anything else is not a kernel answer (and
  // negating INT_MIN would overflow).
  if (neg_errno > 0 || neg_errno < -4095) {
    return NlMalformed(protocol, "NLMSG_ERROR code " + std::to_string(neg_errno) + " is not a -errno");
  }
  return -neg_errno;
}

Result<GenlMessage> SplitGenlMessage(const NlMessage& m, std::string_view protocol) {
  if (m.body.size() < GENL_HDRLEN) {
    return NlMalformed(protocol, "message of " + std::to_string(m.body.size()) + " bytes after its netlink header, " +
                                     "a generic netlink header needs " + std::to_string(GENL_HDRLEN));
  }
  genlmsghdr g;
  std::memcpy(&g, m.body.data(), sizeof(g));
  return GenlMessage{m.header, g.cmd, g.version, m.body.subspan(GENL_HDRLEN)};
}

namespace {

// The errno of an NLMSG_ERROR message as an Error, or 0 for an acknowledgement.
Result<int> KernelError(const NlMessage& m, std::string_view protocol) {
  auto err = NlErrorCode(m.body, protocol);
  if (!err) return err.error();
  return *err;
}

Result<GenlMessage> CheckedGenl(const NlMessage& m, std::uint16_t family_id, std::uint8_t expected_cmd,
                                std::string_view protocol) {
  if (m.header.nlmsg_type != family_id) {
    return NlMalformed(protocol, "message type " + std::to_string(m.header.nlmsg_type) + ", expected the family " +
                                     std::to_string(family_id));
  }
  auto g = SplitGenlMessage(m, protocol);
  if (!g) return g.error();
  if (g->cmd != expected_cmd) {
    return NlMalformed(protocol, "command " + std::to_string(g->cmd) + ", expected " + std::to_string(expected_cmd));
  }
  return g;
}

}  // namespace

Result<GenlMessage> GenlReply(std::span<const std::uint8_t> datagram, std::uint16_t family_id,
                              std::uint8_t expected_cmd, std::uint32_t expected_seq, std::string_view protocol) {
  auto messages = SplitNlMessages(datagram, protocol);
  if (!messages) return messages.error();
  const NlMessage& m = messages->front();
  if (expected_seq != 0 && m.header.nlmsg_seq != expected_seq) {
    return NlMalformed(protocol, "sequence " + std::to_string(m.header.nlmsg_seq) + ", expected " +
                                     std::to_string(expected_seq));
  }
  if (m.header.nlmsg_type == NLMSG_ERROR) {
    auto err = KernelError(m, protocol);
    if (!err) return err.error();
    if (*err == 0) return NlMalformed(protocol, "an acknowledgement without a reply");
    return Error::FromErrno(std::string(protocol), *err);
  }
  return CheckedGenl(m, family_id, expected_cmd, protocol);
}

Result<bool> GenlDumpMessages(std::span<const std::uint8_t> datagram, std::uint16_t family_id,
                              std::uint8_t expected_cmd, std::string_view protocol, std::vector<GenlMessage>& out) {
  auto messages = SplitNlMessages(datagram, protocol);
  if (!messages) return messages.error();
  for (const NlMessage& m : *messages) {
    if (m.header.nlmsg_type == NLMSG_DONE) {
      // A dump that failed part-way ends in an NLMSG_DONE carrying -errno.
      int code = 0;
      if (m.body.size() >= sizeof(code)) std::memcpy(&code, m.body.data(), sizeof(code));
      if (code < 0 && code >= -4095) return Error::FromErrno(std::string(protocol), -code);
      return true;
    }
    if (m.header.nlmsg_type == NLMSG_ERROR) {
      auto err = KernelError(m, protocol);
      if (!err) return err.error();
      if (*err == 0) continue;
      return Error::FromErrno(std::string(protocol), *err);
    }
    auto g = CheckedGenl(m, family_id, expected_cmd, protocol);
    if (!g) return g.error();
    out.push_back(*g);
  }
  return false;
}

}  // namespace rdmahd
