#include "daemon/client_address.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

namespace rdmahd {
namespace {

// Who a connection counts against for max_connections_per_client: an IPv4 address, or an IPv6
// address's /64 (a host is usually given a whole /64, so its addresses are one client).
TEST(HttpServerConnectionsTest, ClientKeyIsTheIpv4AddressOrTheIpv6Slash64) {
  auto v6 = [](const char* text) {
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    EXPECT_EQ(inet_pton(AF_INET6, text, &a.sin6_addr), 1) << text;
    return ClientAddressKey(reinterpret_cast<const sockaddr*>(&a));
  };
  auto v4 = [](const char* text) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    EXPECT_EQ(inet_pton(AF_INET, text, &a.sin_addr), 1) << text;
    return ClientAddressKey(reinterpret_cast<const sockaddr*>(&a));
  };
  EXPECT_EQ(v6("2001:db8:1:2::1"), v6("2001:db8:1:2:ffff:eeee:dddd:cccc"));
  EXPECT_NE(v6("2001:db8:1:2::1"), v6("2001:db8:1:3::1"));
  EXPECT_EQ(v6("::ffff:10.0.0.1"), v4("10.0.0.1"));
  EXPECT_NE(v4("10.0.0.1"), v4("10.0.0.2"));
  EXPECT_NE(v6("::1"), v4("127.0.0.1"));
}

}  // namespace
}  // namespace rdmahd
