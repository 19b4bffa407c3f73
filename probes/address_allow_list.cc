#include "probes/address_allow_list.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "common/excerpt.h"

namespace rdmahd {
namespace {

std::optional<MappedIp> MappedIpOf(const sockaddr* sa) {
  MappedIp out{};
  if (sa == nullptr) return std::nullopt;
  if (sa->sa_family == AF_INET) {
    out[10] = out[11] = 0xff;
    std::memcpy(&out[12], &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, 4);
    return out;
  }
  if (sa->sa_family == AF_INET6) {
    std::memcpy(out.data(), &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, 16);
    return out;
  }
  return std::nullopt;
}

}  // namespace

Result<AddressAllowList> AddressAllowList::Parse(const std::vector<std::string>& entries) {
  AddressAllowList list;
  for (const std::string& entry : entries) {
    Result<IpNetwork> net = ParseCidr(entry);
    if (!net.ok()) return Error{"responder.allow: " + QuoteExcerpt(entry) + ": " + net.error().message};
    list.entries_.push_back(*net);
  }
  return list;
}

bool AddressAllowList::Allows(const MappedIp& address) const {
  return std::any_of(entries_.begin(), entries_.end(), [&](const IpNetwork& e) { return e.Contains(address); });
}

bool AddressAllowList::Allows(const sockaddr* peer) const {
  std::optional<MappedIp> a = MappedIpOf(peer);
  return a && Allows(*a);
}

bool AddressAllowList::Allows(const std::string& ip) const {
  std::optional<MappedIp> a = ParseIpAddress(ip);
  return a && Allows(*a);
}

}  // namespace rdmahd
