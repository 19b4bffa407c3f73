// ListenAddress: --web.listen-address parsed strictly, and the listening socket bound from it.
// The daemon binds the socket itself (and hands it to the HTTP library) so that a bad address or a
// port in use is reported in plain words, and so that the port is held before the first collection.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "common/result.h"

namespace rdmahd {

struct ListenAddress {
  enum class Kind {
    kDualStack,  // ":PORT": every IPv4 and IPv6 address (one IPv6 socket with IPV6_V6ONLY off)
    kIPv4,       // "A.B.C.D:PORT", "localhost:PORT" (= 127.0.0.1)
    kIPv6,       // "[V6]:PORT"
  };
  Kind kind = Kind::kDualStack;
  std::string text;  // what the user wrote, for messages
  sockaddr_storage addr{};
  socklen_t addr_len = 0;
  std::uint16_t port = 0;
};

// Accepts ":PORT", "IPv4:PORT" (dotted quad only: 999.1.1.1 and 10.1 are errors), "[IPv6]:PORT"
// (with an optional %zone), "localhost:PORT". PORT is 0..65535 (0 = any free port). Host names
// other than localhost are refused: an exporter should not depend on DNS to start.
Result<ListenAddress> ParseListenAddress(const std::string& text);

// A bound, listening, non-blocking, close-on-exec TCP socket. Owns the fd.
class ListeningSocket {
 public:
  ListeningSocket() = default;
  ~ListeningSocket();
  ListeningSocket(ListeningSocket&& other) noexcept;
  ListeningSocket& operator=(ListeningSocket&& other) noexcept;
  ListeningSocket(const ListeningSocket&) = delete;
  ListeningSocket& operator=(const ListeningSocket&) = delete;

  // Binds and listens. A dual-stack address falls back to IPv4 only when the kernel has no IPv6.
  // Errors read "address 127.0.0.1:9872 is already in use" and the like.
  static Result<ListeningSocket> Open(const ListenAddress& address);

  int fd() const { return fd_; }
  int port() const { return port_; }
  // Gives up ownership (the HTTP library closes it from then on).
  int release();

 private:
  int fd_ = -1;
  int port_ = 0;
};

}  // namespace rdmahd
