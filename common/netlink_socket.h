// Opening a libmnl netlink socket the way the DCB and RDMA readers need it: bound with an
// automatic port id and a 1 s receive timeout, so a reply the kernel never sends costs a scrape at
// most a second.
#pragma once

#include <string_view>

#include "common/result.h"

struct mnl_socket;

namespace rdmahd {

// `bus` is NETLINK_ROUTE, NETLINK_RDMA, ...; `bus_name` names it in errors.
Result<mnl_socket*> OpenNetlinkSocket(int bus, std::string_view bus_name);

}  // namespace rdmahd
