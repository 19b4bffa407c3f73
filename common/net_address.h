// Textual checks of network addresses as a config names them: IP literals, CIDR blocks and DNS
// names. No resolution happens here (a name that does not resolve is a runtime matter, never a
// config error).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace rdmahd {

// An IPv4 dotted quad or an IPv6 address (no brackets, no zone, no port).
bool IsIpLiteral(std::string_view s);

// "10.0.0.0/24", "fd00::/64" or a plain IP literal (a single host). nullopt when valid, else why not.
std::optional<std::string> CheckIpOrCidr(std::string_view s);

// A peer target: an IP literal or a DNS name (letters, digits, '-' and '_' in dot-separated labels
// of 1..63 characters, at most 253 in all, one trailing dot allowed). nullopt when valid, else why
// not ("host:port" and URLs get their own hint).
std::optional<std::string> CheckPeerTarget(std::string_view s);

}  // namespace rdmahd
