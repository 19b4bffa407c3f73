#include "common/net_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "common/parse.h"

namespace rdmahd {

std::optional<MappedIp> ParseIpAddress(std::string_view s) {
  if (s.empty() || s.size() >= INET6_ADDRSTRLEN) return std::nullopt;
  const std::string text(s);
  MappedIp out{};
  in_addr v4{};
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) {
    out[10] = out[11] = 0xff;
    std::memcpy(&out[12], &v4, sizeof v4);
    return out;
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, text.c_str(), &v6) == 1) {
    std::memcpy(out.data(), &v6, sizeof v6);
    return out;
  }
  return std::nullopt;
}

bool IsIpLiteral(std::string_view s) { return ParseIpAddress(s).has_value(); }

bool IpNetwork::Contains(const MappedIp& address) const {
  unsigned bit = 0;
  for (; bit + 8 <= prefix; bit += 8) {
    if (address[bit / 8] != network[bit / 8]) return false;
  }
  if (bit < prefix) {
    const auto mask = static_cast<std::uint8_t>(0xff << (8 - (prefix - bit)));
    if ((address[bit / 8] & mask) != (network[bit / 8] & mask)) return false;
  }
  return true;
}

Result<IpNetwork> ParseCidr(std::string_view s) {
  const auto slash = s.find('/');
  const std::string_view ip = s.substr(0, slash);
  const std::optional<MappedIp> address = ParseIpAddress(ip);
  if (!address) return Error{"not an IP address or CIDR block (10.0.0.0/24, fd00::/64)"};
  const bool v4 = ip.find(':') == std::string_view::npos;
  const unsigned max_prefix = v4 ? 32 : 128;
  IpNetwork net;
  net.network = *address;
  net.prefix = 128;
  if (slash != std::string_view::npos) {
    const std::string_view digits = s.substr(slash + 1);
    const bool ok = !digits.empty() && digits.size() <= 3 &&
                    std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
    const std::optional<std::uint64_t> n = ok ? ParseU64(digits) : std::nullopt;
    if (!n || *n > max_prefix) return Error{"prefix length must be 0 to " + std::to_string(max_prefix)};
    net.prefix = static_cast<unsigned>(*n) + (v4 ? 96 : 0);
  }
  for (unsigned bit = net.prefix; bit < 128; ++bit) {
    net.network[bit / 8] &= static_cast<std::uint8_t>(~(0x80u >> (bit % 8)));
  }
  return net;
}

std::optional<std::string> CheckIpOrCidr(std::string_view s) {
  Result<IpNetwork> net = ParseCidr(s);
  if (!net.ok()) return net.error().message;
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
