#include "common/net_address.h"

#include <arpa/inet.h>

#include <cctype>

#include "common/parse.h"

namespace rdmahd {

bool IsIpLiteral(std::string_view s) {
  if (s.empty() || s.size() >= INET6_ADDRSTRLEN) return false;
  const std::string text(s);
  unsigned char buf[sizeof(struct in6_addr)];
  return inet_pton(AF_INET, text.c_str(), buf) == 1 || inet_pton(AF_INET6, text.c_str(), buf) == 1;
}

std::optional<std::string> CheckIpOrCidr(std::string_view s) {
  const auto slash = s.find('/');
  const std::string_view ip = s.substr(0, slash);
  if (!IsIpLiteral(ip)) return "not an IP address or CIDR block (10.0.0.0/24, fd00::/64)";
  if (slash == std::string_view::npos) return std::nullopt;
  const int max_prefix = ip.find(':') == std::string_view::npos ? 32 : 128;
  const std::string_view prefix = s.substr(slash + 1);
  const auto n = prefix.empty() || prefix.size() > 3 ? std::nullopt : ParseU64(prefix);
  if (!n || *n > static_cast<std::uint64_t>(max_prefix)) {
    return "prefix length must be 0 to " + std::to_string(max_prefix);
  }
  return std::nullopt;
}

std::optional<std::string> CheckPeerTarget(std::string_view s) {
  if (s.empty()) return "empty";
  if (IsIpLiteral(s)) return std::nullopt;
  if (s.find("://") != std::string_view::npos) return "a URL; give the address or host name only";
  if (s.find(':') != std::string_view::npos || s.front() == '[') {
    return "not an IP address or host name (the port is peers.port, not part of the target)";
  }
  std::string_view name = s;
  if (name.back() == '.') name.remove_suffix(1);
  if (name.empty() || name.size() > 253) return "not a host name (1 to 253 characters)";
  std::size_t label = 0;
  for (std::size_t i = 0; i <= name.size(); ++i) {
    if (i == name.size() || name[i] == '.') {
      if (label == 0 || label > 63) return "not a host name (each dot-separated part must be 1 to 63 characters)";
      if (name[i - 1] == '-' || name[i - label] == '-') return "not a host name (a part starts or ends with '-')";
      label = 0;
      continue;
    }
    const unsigned char c = static_cast<unsigned char>(name[i]);
    if (!std::isalnum(c) && c != '-' && c != '_') {
      return "not a host name (only letters, digits, '-', '_' and '.')";
    }
    ++label;
  }
  return std::nullopt;
}

}  // namespace rdmahd
