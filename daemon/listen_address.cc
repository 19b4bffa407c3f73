#include "daemon/listen_address.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/parse.h"

namespace rdmahd {
namespace {

Error Bad(const std::string& text, const std::string& why) {
  return Error{"--web.listen-address \"" + text + "\": " + why +
               " (want :PORT, IPv4:PORT, [IPv6]:PORT or localhost:PORT, e.g. :9872 or 127.0.0.1:9872)"};
}

// The backlog is the kernel's cap (net.core.somaxconn); a burst of connects is not refused early.
constexpr int kBacklog = 4096;

}  // namespace

Result<ListenAddress> ParseListenAddress(const std::string& text) {
  auto colon = text.rfind(':');
  if (colon == std::string::npos) return Bad(text, "no port");
  std::string host = text.substr(0, colon);
  std::string port_text = text.substr(colon + 1);
  auto port = ParseU64(port_text);
  if (port_text.empty() || !port || *port > 65535) {
    return Bad(text, "port \"" + port_text + "\" is not a number from 0 to 65535");
  }
  ListenAddress a;
  a.text = text;
  a.port = static_cast<std::uint16_t>(*port);
  if (host.empty()) {
    a.kind = ListenAddress::Kind::kDualStack;
    auto* s6 = reinterpret_cast<sockaddr_in6*>(&a.addr);
    s6->sin6_family = AF_INET6;
    s6->sin6_addr = in6addr_any;
    s6->sin6_port = htons(a.port);
    a.addr_len = sizeof(sockaddr_in6);
    return a;
  }
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return Bad(text, "an IPv6 address must be in brackets");
    std::string ip = host.substr(1, host.size() - 2);
    std::string zone;
    if (auto pct = ip.find('%'); pct != std::string::npos) {
      zone = ip.substr(pct + 1);
      ip.resize(pct);
    }
    auto* s6 = reinterpret_cast<sockaddr_in6*>(&a.addr);
    if (inet_pton(AF_INET6, ip.c_str(), &s6->sin6_addr) != 1) {
      return Bad(text, "\"" + ip + "\" is not an IPv6 address");
    }
    if (!zone.empty()) {
      unsigned index = if_nametoindex(zone.c_str());
      if (index == 0) {
        auto numeric = ParseU64(zone);
        if (!numeric || *numeric > 0xffffffffu) return Bad(text, "no network interface \"" + zone + "\"");
        index = static_cast<unsigned>(*numeric);
      }
      s6->sin6_scope_id = index;
    }
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(a.port);
    a.addr_len = sizeof(sockaddr_in6);
    a.kind = ListenAddress::Kind::kIPv6;
    return a;
  }
  auto* s4 = reinterpret_cast<sockaddr_in*>(&a.addr);
  if (host == "localhost") {
    s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  } else if (inet_pton(AF_INET, host.c_str(), &s4->sin_addr) != 1) {
    // inet_pton takes only a full dotted quad of 0..255 (unlike inet_aton, which takes 10.1).
    if (host.find(':') != std::string::npos) return Bad(text, "an IPv6 address must be in brackets");
    return Bad(text, "\"" + host + "\" is not an IPv4 address");
  }
  s4->sin_family = AF_INET;
  s4->sin_port = htons(a.port);
  a.addr_len = sizeof(sockaddr_in);
  a.kind = ListenAddress::Kind::kIPv4;
  return a;
}

ListeningSocket::~ListeningSocket() {
  if (fd_ >= 0) ::close(fd_);
}

ListeningSocket::ListeningSocket(ListeningSocket&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), port_(other.port_) {}

ListeningSocket& ListeningSocket::operator=(ListeningSocket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    port_ = other.port_;
  }
  return *this;
}

int ListeningSocket::release() { return std::exchange(fd_, -1); }

Result<ListeningSocket> ListeningSocket::Open(const ListenAddress& address) {
  ListenAddress a = address;
  int fd = ::socket(a.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0 && errno == EAFNOSUPPORT && a.kind == ListenAddress::Kind::kDualStack) {
    // No IPv6 in this kernel (ipv6.disable=1): all IPv4 addresses is what ":PORT" can still mean.
    a.addr = {};
    auto* s4 = reinterpret_cast<sockaddr_in*>(&a.addr);
    s4->sin_family = AF_INET;
    s4->sin_addr.s_addr = htonl(INADDR_ANY);
    s4->sin_port = htons(a.port);
    a.addr_len = sizeof(sockaddr_in);
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  }
  if (fd < 0) return Error::FromErrno("cannot listen on " + a.text + ": socket", errno);
  ListeningSocket s;
  s.fd_ = fd;
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (a.kind == ListenAddress::Kind::kDualStack && a.addr.ss_family == AF_INET6) {
    int zero = 0;  // the kernel default (net.ipv6.bindv6only) may be 1: ":PORT" means both
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
  }
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&a.addr), a.addr_len) != 0) {
    int err = errno;
    switch (err) {
      case EADDRINUSE:
        return Error{"address " + a.text + " is already in use (another process listens on that port)", err};
      case EADDRNOTAVAIL:
        return Error{"address " + a.text + " is not an address of this host", err};
      case EACCES:
        return Error{"address " + a.text + ": permission denied (ports below 1024 need CAP_NET_BIND_SERVICE)",
                     err};
      default:
        return Error::FromErrno("cannot listen on " + a.text + ": bind", err);
    }
  }
  if (::listen(fd, kBacklog) != 0) return Error::FromErrno("cannot listen on " + a.text + ": listen", errno);
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len) == 0) {
    s.port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                                : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  }
  return s;
}

}  // namespace rdmahd
