// Network addresses as a config names them: IP literals, CIDR blocks and DNS names. No resolution
// happens here (a name that does not resolve is a runtime matter, never a config error).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace rdmahd {

// An IP address as 16 bytes, IPv4 as IPv4-mapped IPv6 (::ffff:a.b.c.d), so that one comparison
// serves both families.
using MappedIp = std::array<std::uint8_t, 16>;

// `s` as an IPv4 dotted quad or an IPv6 address (no brackets, no zone, no port); nullopt when it
// is neither.
std::optional<MappedIp> ParseIpAddress(std::string_view s);

// An IP address (v4 or v6) as above.
bool IsIpLiteral(std::string_view s);

// A block of addresses: those whose first `prefix` bits are `network`'s, counted on the mapped
// form (an IPv4 /24 is prefix 120; 0.0.0.0/0 is every IPv4 address, not every address).
struct IpNetwork {
  MappedIp network{};   // host bits cleared
  unsigned prefix = 128;

  bool Contains(const MappedIp& address) const;
};

// "10.0.0.0/24", "fd00::/64" or a plain IP literal (a single host). Host bits are ignored:
// "192.0.2.7/24" is 192.0.2.0/24, as ip(8) and Go's ParseCIDR read it. The prefix length is 1 to 3
// digits. The error says why not (for a message that quotes `s` itself).
Result<IpNetwork> ParseCidr(std::string_view s);

// ParseCidr's verdict alone: nullopt when valid, else why not.
std::optional<std::string> CheckIpOrCidr(std::string_view s);

// A peer target: an IP literal or a DNS name (letters, digits, '-' and '_' in dot-separated labels
// of 1..63 characters, at most 253 in all, one trailing dot allowed). nullopt when valid, else why
// not ("host:port" and URLs get their own hint).
std::optional<std::string> CheckPeerTarget(std::string_view s);

}  // namespace rdmahd
