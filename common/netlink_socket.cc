#include "common/netlink_socket.h"

#include <libmnl/libmnl.h>
#include <linux/netlink.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "common/netlink_parse.h"

namespace rdmahd {

NetlinkSocket::NetlinkSocket(int bus, std::string what) : bus_(bus), what_(std::move(what)) {}

NetlinkSocket::~NetlinkSocket() { Close(); }

void NetlinkSocket::Close() {
  if (nl_ != nullptr) mnl_socket_close(nl_);
  nl_ = nullptr;
}

Status NetlinkSocket::Open() {
  if (nl_ != nullptr) return Status::Ok();
  mnl_socket* nl = mnl_socket_open(bus_);
  if (nl == nullptr) return Error::FromErrno("open netlink socket for " + what_, errno);
  if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
    int err = errno;
    mnl_socket_close(nl);
    return Error::FromErrno("bind netlink socket for " + what_, err);
  }
  timeval timeout{1, 0};
  if (setsockopt(mnl_socket_get_fd(nl), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout)) != 0) {
    int err = errno;
    mnl_socket_close(nl);
    return Error::FromErrno("set netlink receive timeout", err);
  }
  nl_ = nl;
  return Status::Ok();
}

Result<std::vector<std::vector<std::uint8_t>>> NetlinkSocket::Exchange(std::span<const std::uint8_t> request,
                                                                       bool dump, int max_datagrams) {
  if (Status st = Open(); !st) return st.error();
  nlmsghdr req;
  if (request.size() < sizeof(req)) return Error{what_ + " request shorter than a netlink header", EINVAL};
  std::memcpy(&req, request.data(), sizeof(req));
  if (mnl_socket_sendto(nl_, request.data(), request.size()) < 0) {
    int err = errno;
    Close();
    return Error::FromErrno("send " + what_, err);
  }
  std::vector<std::vector<std::uint8_t>> out;
  std::vector<std::uint8_t> buf(32768);  // MNL_SOCKET_DUMP_SIZE in newer libmnl
  for (int datagrams = 0; datagrams < max_datagrams; ++datagrams) {
    ssize_t n = mnl_socket_recvfrom(nl_, buf.data(), buf.size());
    if (n < 0) {
      int err = errno;
      Close();
      return Error::FromErrno("receive " + what_ + " answer", err);
    }
    // A datagram too short for a header is handed on: the caller's parser says what is wrong.
    nlmsghdr got;
    if (static_cast<std::size_t>(n) >= sizeof(got)) {
      std::memcpy(&got, buf.data(), sizeof(got));
      if (got.nlmsg_seq != req.nlmsg_seq) continue;
    }
    out.emplace_back(buf.begin(), buf.begin() + n);
    if (!dump) return out;
    auto messages = SplitNlMessages(out.back(), "netlink");
    if (!messages) return messages.error();
    if (!messages->empty() && (messages->back().header.nlmsg_type == NLMSG_DONE ||
                               messages->back().header.nlmsg_type == NLMSG_ERROR)) {
      return out;
    }
  }
  Close();
  return Error{what_ + ": no complete answer with the request's sequence number in " + std::to_string(max_datagrams) +
                   " datagrams",
               EPROTO};
}

}  // namespace rdmahd
