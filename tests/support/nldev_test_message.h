// Test support for the RDMA netlink decoders (parsers/rdma_nl_stats.h): builds nldev answers with
// libmnl as the kernel's rdma_nl writes them, so the parser tests and the fake kernels of the
// collectors' tests state the values a reply carries.
#pragma once

#include <libmnl/libmnl.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "parsers/rdma_nl_stats.h"

namespace rdmahd::testing {

inline constexpr std::uint16_t kNldevGet = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET);
inline constexpr std::uint16_t kNldevStatGet = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_STAT_GET);

// Builds kernel-style answers with libmnl, message by message, into one datagram.
class NldevDatagram {
 public:
  nlmsghdr* Add(std::uint16_t type, std::uint32_t seq) {
    const std::size_t at = bytes_.size();
    bytes_.resize(at + 4096);
    nlmsghdr* nlh = mnl_nlmsg_put_header(bytes_.data() + at);
    nlh->nlmsg_type = type;
    nlh->nlmsg_seq = seq;
    last_ = at;
    return nlh;
  }
  void Close(nlmsghdr* nlh) { bytes_.resize(last_ + NLMSG_ALIGN(nlh->nlmsg_len)); }
  void Error(std::uint32_t seq, int err) {
    nlmsghdr* nlh = Add(NLMSG_ERROR, seq);
    auto* e = static_cast<nlmsgerr*>(mnl_nlmsg_put_extra_header(nlh, sizeof(nlmsgerr)));
    e->error = -err;
    Close(nlh);
  }
  void Done(std::uint32_t seq) {
    nlmsghdr* nlh = Add(NLMSG_DONE, seq);
    mnl_nlmsg_put_extra_header(nlh, sizeof(int));
    Close(nlh);
  }
  const std::vector<std::uint8_t>& bytes() const { return bytes_; }

 private:
  std::vector<std::uint8_t> bytes_;
  std::size_t last_ = 0;
};

// One RDMA_NLDEV_CMD_STAT_GET answer: the device handle, the port and its hw counter table.
inline void PutNldevStatReply(NldevDatagram& d, std::uint32_t seq, std::uint32_t index, const std::string& name,
                              std::uint32_t port, const std::vector<NldevHwCounter>& counters) {
  nlmsghdr* nlh = d.Add(kNldevStatGet, seq);
  mnl_attr_put_u32(nlh, RDMA_NLDEV_ATTR_DEV_INDEX, index);
  mnl_attr_put_strz(nlh, RDMA_NLDEV_ATTR_DEV_NAME, name.c_str());
  mnl_attr_put_u32(nlh, RDMA_NLDEV_ATTR_PORT_INDEX, port);
  nlattr* table = mnl_attr_nest_start(nlh, RDMA_NLDEV_ATTR_STAT_HWCOUNTERS);
  for (const NldevHwCounter& c : counters) {
    nlattr* entry = mnl_attr_nest_start(nlh, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY);
    mnl_attr_put_strz(nlh, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, c.name.c_str());
    mnl_attr_put_u64(nlh, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE, c.value);
    mnl_attr_nest_end(nlh, entry);
  }
  mnl_attr_nest_end(nlh, table);
  d.Close(nlh);
}

}  // namespace rdmahd::testing
