#include "common/netlink_socket.h"

#include <libmnl/libmnl.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cerrno>
#include <string>

namespace rdmahd {

Result<mnl_socket*> OpenNetlinkSocket(int bus, std::string_view bus_name) {
  const std::string name(bus_name);
  mnl_socket* nl = mnl_socket_open(bus);
  if (nl == nullptr) return Error::FromErrno("open " + name + " socket", errno);
  if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
    int err = errno;
    mnl_socket_close(nl);
    return Error::FromErrno("bind " + name + " socket", err);
  }
  timeval timeout{1, 0};
  if (setsockopt(mnl_socket_get_fd(nl), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout)) != 0) {
    int err = errno;
    mnl_socket_close(nl);
    return Error::FromErrno("set netlink receive timeout", err);
  }
  return nl;
}

}  // namespace rdmahd
