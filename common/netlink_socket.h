// A libmnl netlink socket the way the DCB and RDMA readers need it: opened on first use and kept,
// bound with an automatic port id, with a 1 s receive timeout so a reply the kernel never sends
// costs a scrape at most a second, and closed after any error so the next exchange starts clean.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"

struct mnl_socket;

namespace rdmahd {

class NetlinkSocket {
 public:
  // `bus` is NETLINK_ROUTE, NETLINK_RDMA, ...; `what` names the requests in errors ("RTM_GETDCB").
  NetlinkSocket(int bus, std::string what);
  ~NetlinkSocket();
  NetlinkSocket(const NetlinkSocket&) = delete;
  NetlinkSocket& operator=(const NetlinkSocket&) = delete;

  // Sends `request` and returns the datagrams with its sequence number: the first one, or with
  // `dump` every one up to and including the datagram whose last message is NLMSG_DONE or
  // NLMSG_ERROR. Answers to earlier requests still queued (after a timeout) are skipped, at most
  // `max_datagrams` datagrams are read in all.
  Result<std::vector<std::vector<std::uint8_t>>> Exchange(std::span<const std::uint8_t> request, bool dump,
                                                          int max_datagrams);

 private:
  Status Open();
  void Close();
  int bus_;
  std::string what_;
  mnl_socket* nl_ = nullptr;
};

}  // namespace rdmahd
