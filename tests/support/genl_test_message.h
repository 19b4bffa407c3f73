// Test support for the generic netlink decoders of parsers/: builds kernel-style datagrams with
// libmnl (the same attribute layout the kernel's nla_put_* writes), so tests state the values a
// reply carries and the decoder is checked against the uapi definitions, not against itself.
#pragma once

#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

namespace rdmahd::testing {

class GenlDatagram {
 public:
  // Starts a message of `type` (a family id) carrying `cmd`; attributes go through nlh().
  nlmsghdr* Begin(std::uint16_t type, std::uint8_t cmd, std::uint32_t seq = 1) {
    at_ = bytes_.size();
    bytes_.resize(at_ + kRoom);
    nlh_ = mnl_nlmsg_put_header(bytes_.data() + at_);
    nlh_->nlmsg_type = type;
    nlh_->nlmsg_seq = seq;
    auto* g = static_cast<genlmsghdr*>(mnl_nlmsg_put_extra_header(nlh_, sizeof(genlmsghdr)));
    g->cmd = cmd;
    g->version = 1;
    return nlh_;
  }
  void End() {
    bytes_.resize(at_ + NLMSG_ALIGN(nlh_->nlmsg_len));
    nlh_ = nullptr;
  }
  nlmsghdr* nlh() { return nlh_; }

  void Error(int err, std::uint32_t seq = 1) {
    at_ = bytes_.size();
    bytes_.resize(at_ + kRoom);
    nlh_ = mnl_nlmsg_put_header(bytes_.data() + at_);
    nlh_->nlmsg_type = NLMSG_ERROR;
    nlh_->nlmsg_seq = seq;
    auto* e = static_cast<nlmsgerr*>(mnl_nlmsg_put_extra_header(nlh_, sizeof(nlmsgerr)));
    e->error = -err;
    End();
  }
  void Done(int err = 0, std::uint32_t seq = 1) {
    at_ = bytes_.size();
    bytes_.resize(at_ + kRoom);
    nlh_ = mnl_nlmsg_put_header(bytes_.data() + at_);
    nlh_->nlmsg_type = NLMSG_DONE;
    nlh_->nlmsg_seq = seq;
    auto* code = static_cast<int*>(mnl_nlmsg_put_extra_header(nlh_, sizeof(int)));
    *code = -err;
    End();
  }

  const std::vector<std::uint8_t>& bytes() const { return bytes_; }

 private:
  static constexpr std::size_t kRoom = 16384;
  std::vector<std::uint8_t> bytes_;
  std::size_t at_ = 0;
  nlmsghdr* nlh_ = nullptr;
};

// A u64 array attribute (ETHTOOL_A_FEC_STAT_*): the values back to back in host order.
inline void PutU64Array(nlmsghdr* nlh, std::uint16_t type, const std::vector<std::uint64_t>& values) {
  mnl_attr_put(nlh, type, values.size() * sizeof(std::uint64_t), values.data());
}

// Every proper prefix of a one-message datagram, with the netlink header's length set to the
// prefix's (when the header is whole): the truncations a short read produces, reaching down into
// the nested attributes rather than stopping at the outer length check.
inline std::vector<std::vector<std::uint8_t>> Truncations(const std::vector<std::uint8_t>& bytes) {
  std::vector<std::vector<std::uint8_t>> out;
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    std::vector<std::uint8_t> prefix(bytes.begin(), bytes.begin() + static_cast<long>(n));
    if (n >= sizeof(nlmsghdr)) {
      const auto len = static_cast<std::uint32_t>(n);
      std::memcpy(prefix.data(), &len, sizeof(len));
    }
    out.push_back(std::move(prefix));
  }
  return out;
}

}  // namespace rdmahd::testing
