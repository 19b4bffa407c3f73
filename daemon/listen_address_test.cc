#include "daemon/listen_address.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <unistd.h>

namespace rdmahd {
namespace {

TEST(HttpServerListenAddressTest, AcceptedForms) {
  auto any = ParseListenAddress(":9872");
  ASSERT_TRUE(any.ok());
  EXPECT_EQ(any->kind, ListenAddress::Kind::kDualStack);
  EXPECT_EQ(any->port, 9872);

  auto v4 = ParseListenAddress("127.0.0.1:9872");
  ASSERT_TRUE(v4.ok());
  EXPECT_EQ(v4->kind, ListenAddress::Kind::kIPv4);
  char text[INET6_ADDRSTRLEN];
  inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&v4->addr)->sin_addr, text, sizeof text);
  EXPECT_STREQ(text, "127.0.0.1");

  auto local = ParseListenAddress("localhost:1");
  ASSERT_TRUE(local.ok());
  EXPECT_EQ(local->kind, ListenAddress::Kind::kIPv4);
  EXPECT_EQ(reinterpret_cast<const sockaddr_in*>(&local->addr)->sin_addr.s_addr, htonl(INADDR_LOOPBACK));

  auto v6 = ParseListenAddress("[::1]:0");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->kind, ListenAddress::Kind::kIPv6);
  auto v6any = ParseListenAddress("[::]:65535");
  ASSERT_TRUE(v6any.ok());
  EXPECT_EQ(v6any->port, 65535);
}

TEST(HttpServerListenAddressTest, InvalidAddressesAreErrorsNamingTheValue) {
  // The old civetweb-based server bound 231.1.1.1 for this one (999 mod 256).
  auto bad = ParseListenAddress("999.1.1.1:9872");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("\"999.1.1.1\" is not an IPv4 address"), std::string::npos)
      << bad.error().message;
  for (const char* text : {"9872", ":99999", ":http", ":", "10.1:80", "1.2.3.4.5:80", "::1:80", "[::1:80",
                           "[not-v6]:80", "example.com:80", "[::1]:", " 127.0.0.1:80", "127.0.0.1:-1"}) {
    auto r = ParseListenAddress(text);
    EXPECT_FALSE(r.ok()) << text;
    if (!r.ok()) {
      EXPECT_NE(r.error().message.find(text), std::string::npos) << r.error().message;
    }
  }
}

TEST(HttpServerListenAddressTest, PortInUseIsSaidPlainly) {
  auto first = ListeningSocket::Open(*ParseListenAddress("127.0.0.1:0"));
  ASSERT_TRUE(first.ok()) << first.error().message;
  ASSERT_GT(first->port(), 0);
  std::string addr = "127.0.0.1:" + std::to_string(first->port());
  auto second = ListeningSocket::Open(*ParseListenAddress(addr));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().message.rfind("address " + addr + " is already in use", 0), 0u)
      << second.error().message;
}

TEST(HttpServerListenAddressTest, DualStackTakesIPv4AndIPv6Clients) {
  auto s = ListeningSocket::Open(*ParseListenAddress(":0"));
  ASSERT_TRUE(s.ok()) << s.error().message;
  auto connects = [&](int family, const char* ip) {
    int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    sockaddr_storage ss{};
    socklen_t len;
    if (family == AF_INET) {
      auto* a = reinterpret_cast<sockaddr_in*>(&ss);
      a->sin_family = AF_INET;
      a->sin_port = htons(static_cast<uint16_t>(s->port()));
      inet_pton(AF_INET, ip, &a->sin_addr);
      len = sizeof *a;
    } else {
      auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
      a->sin6_family = AF_INET6;
      a->sin6_port = htons(static_cast<uint16_t>(s->port()));
      inet_pton(AF_INET6, ip, &a->sin6_addr);
      len = sizeof *a;
    }
    bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&ss), len) == 0;
    ::close(fd);
    return ok;
  };
  EXPECT_TRUE(connects(AF_INET, "127.0.0.1"));
  int probe = ::socket(AF_INET6, SOCK_STREAM, 0);
  if (probe >= 0) {
    ::close(probe);
    EXPECT_TRUE(connects(AF_INET6, "::1"));
  }
}

}  // namespace
}  // namespace rdmahd
