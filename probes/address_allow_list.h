// AddressAllowList: responder.allow, the peers the probe responder admits. IPs and CIDR blocks, v4
// and v6 (parsed by common/net_address.h's ParseCidr, as the config validates them). An
// IPv4-mapped IPv6 peer (::ffff:a.b.c.d) matches the IPv4 entries, as rdma_cm may report a v4 peer
// that way.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/net_address.h"
#include "common/result.h"

struct sockaddr;

namespace rdmahd {

class AddressAllowList {
 public:
  // The error names the entry, quoted as an escaped excerpt (`responder.allow: "x": why`).
  static Result<AddressAllowList> Parse(const std::vector<std::string>& entries);
  bool Allows(const sockaddr* peer) const;   // false for a null or non-IP address
  bool Allows(const std::string& ip) const;  // numeric address; false when it does not parse
  std::size_t size() const { return entries_.size(); }

 private:
  bool Allows(const MappedIp& address) const;
  std::vector<IpNetwork> entries_;
};

}  // namespace rdmahd
