#include "parsers/rdma_nl_stats.h"

#include <libmnl/libmnl.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>

#include <cerrno>
#include <cstring>
#include <initializer_list>
#include <string_view>
#include <utility>

#include "common/netlink_parse.h"

namespace rdmahd {
namespace {

constexpr std::string_view kProtocol = "RDMA netlink";
constexpr std::uint16_t kGetType = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET);
constexpr std::uint16_t kStatGetType = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_STAT_GET);

Error Malformed(std::string_view what) { return NlMalformed(kProtocol, what); }

// One request message: the header, then `u32_attrs` (type, value) in order.
std::vector<std::uint8_t> Request(std::uint16_t type, std::uint16_t flags, std::uint32_t seq,
                                  std::initializer_list<std::pair<std::uint16_t, std::uint32_t>> u32_attrs = {}) {
  std::vector<std::uint8_t> buf(MNL_SOCKET_BUFFER_SIZE);
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf.data());
  nlh->nlmsg_type = type;
  nlh->nlmsg_flags = flags;
  nlh->nlmsg_seq = seq;
  for (const auto& [attr, value] : u32_attrs) mnl_attr_put_u32(nlh, attr, value);
  buf.resize(nlh->nlmsg_len);
  return buf;
}

Result<std::uint32_t> U32(const NlAttr& a, std::string_view name) {
  return NlAttrAs<std::uint32_t>(a, kProtocol, name, "a u32");
}

Result<std::uint64_t> U64(const NlAttr& a, std::string_view name) {
  return NlAttrAs<std::uint64_t>(a, kProtocol, name, "a u64");
}

// A string attribute: up to its NUL, or all of it when the sender left the NUL out.
std::string Str(const NlAttr& a) {
  const char* p = reinterpret_cast<const char*>(a.payload.data());
  return std::string(p, strnlen(p, a.payload.size()));
}

// The device index and name every nldev answer starts with.
Status ParseHandle(const NlAttr& a, std::uint32_t& index, std::string& name) {
  if (a.type == RDMA_NLDEV_ATTR_DEV_INDEX) {
    auto v = U32(a, "RDMA_NLDEV_ATTR_DEV_INDEX");
    if (!v) return v.error();
    index = *v;
  } else if (a.type == RDMA_NLDEV_ATTR_DEV_NAME) {
    name = Str(a);
  }
  return Status::Ok();
}

Result<NldevHwCounter> ParseHwCounterEntry(std::span<const std::uint8_t> nest) {
  auto attrs = SplitNlAttrs(nest, kProtocol, "RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY");
  if (!attrs) return attrs.error();
  NldevHwCounter c;
  bool have_name = false, have_value = false;
  for (const NlAttr& a : *attrs) {
    if (a.type == RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME) {
      c.name = Str(a);
      have_name = !c.name.empty();
    } else if (a.type == RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE) {
      auto v = U64(a, "RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE");
      if (!v) return v.error();
      c.value = *v;
      have_value = true;
    }
  }
  if (!have_name || !have_value) return Malformed("hw counter entry without a name or a value");
  return c;
}

}  // namespace

std::vector<std::uint8_t> BuildNldevGetDumpRequest(std::uint32_t seq) {
  return Request(kGetType, NLM_F_REQUEST | NLM_F_DUMP, seq);
}

std::vector<std::uint8_t> BuildNldevStatGetRequest(std::uint32_t dev_index, std::uint32_t port, std::uint32_t seq) {
  return Request(kStatGetType, NLM_F_REQUEST, seq,
                 {{RDMA_NLDEV_ATTR_DEV_INDEX, dev_index}, {RDMA_NLDEV_ATTR_PORT_INDEX, port}});
}

Result<bool> ParseNldevGetDump(std::span<const std::uint8_t> datagram, std::vector<NldevDevice>& out) {
  auto messages = SplitNlMessages(datagram, kProtocol);
  if (!messages) return messages.error();
  for (const NlMessage& m : *messages) {
    if (m.header.nlmsg_type == NLMSG_DONE) return true;
    if (m.header.nlmsg_type == NLMSG_ERROR) {
      auto err = NlErrorCode(m.body, kProtocol);
      if (!err) return err.error();
      if (*err == 0) continue;
      return Error::FromErrno("RDMA_NLDEV_CMD_GET", *err);
    }
    if (m.header.nlmsg_type != kGetType) {
      return Malformed("unexpected message type " + std::to_string(m.header.nlmsg_type) + " in the device dump");
    }
    auto attrs = SplitNlAttrs(m.body, kProtocol, "RDMA_NLDEV_CMD_GET");
    if (!attrs) return attrs.error();
    NldevDevice dev;
    bool have_index = false;
    for (const NlAttr& a : *attrs) {
      if (Status st = ParseHandle(a, dev.index, dev.name); !st) return st.error();
      have_index |= a.type == RDMA_NLDEV_ATTR_DEV_INDEX;
    }
    if (!have_index || dev.name.empty()) return Malformed("device without an index or a name");
    out.push_back(std::move(dev));
  }
  return false;
}

Result<NldevPortStats> ParseNldevStatReply(std::span<const std::uint8_t> datagram, std::uint32_t expected_seq) {
  auto messages = SplitNlMessages(datagram, kProtocol);
  if (!messages) return messages.error();
  const NlMessage& m = messages->front();
  if (expected_seq != 0 && m.header.nlmsg_seq != expected_seq) {
    return Malformed("sequence " + std::to_string(m.header.nlmsg_seq) + ", expected " + std::to_string(expected_seq));
  }
  if (m.header.nlmsg_type == NLMSG_ERROR) {
    auto err = NlErrorCode(m.body, kProtocol);
    if (!err) return err.error();
    if (*err == 0) return Malformed("acknowledgement without statistics");
    return Error::FromErrno("RDMA_NLDEV_CMD_STAT_GET", *err);
  }
  if (m.header.nlmsg_type != kStatGetType) {
    return Malformed("unexpected message type " + std::to_string(m.header.nlmsg_type));
  }
  auto attrs = SplitNlAttrs(m.body, kProtocol, "RDMA_NLDEV_CMD_STAT_GET");
  if (!attrs) return attrs.error();
  NldevPortStats out;
  bool have_table = false;
  for (const NlAttr& a : *attrs) {
    if (Status st = ParseHandle(a, out.dev_index, out.dev_name); !st) return st.error();
    if (a.type == RDMA_NLDEV_ATTR_PORT_INDEX) {
      auto v = U32(a, "RDMA_NLDEV_ATTR_PORT_INDEX");
      if (!v) return v.error();
      out.port = *v;
    } else if (a.type == RDMA_NLDEV_ATTR_STAT_HWCOUNTERS) {
      have_table = true;
      auto entries = SplitNlAttrs(a.payload, kProtocol, "RDMA_NLDEV_ATTR_STAT_HWCOUNTERS");
      if (!entries) return entries.error();
      for (const NlAttr& e : *entries) {
        if (e.type != RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY) continue;
        auto c = ParseHwCounterEntry(e.payload);
        if (!c) return c.error();
        out.counters.push_back(std::move(*c));
      }
    }
  }
  if (!have_table) return Malformed("no RDMA_NLDEV_ATTR_STAT_HWCOUNTERS table");
  return out;
}

}  // namespace rdmahd
