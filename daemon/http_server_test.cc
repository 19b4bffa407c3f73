#include "daemon/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

namespace rdmahd {
namespace {

// Minimal HTTP/1.0 client against 127.0.0.1 only.
std::string Get(int port, const std::string& method, const std::string& path) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return "connect failed";
  }
  std::string req = method + " " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n";
  (void)!write(fd, req.data(), req.size());
  std::string resp;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) resp.append(buf, static_cast<size_t>(n));
  close(fd);
  return resp;
}

TEST(HttpServerTest, ListenAddressForms) {
  EXPECT_EQ(*HttpServer::ToCivetwebPorts(":9872"), "9872");
  EXPECT_EQ(*HttpServer::ToCivetwebPorts("127.0.0.1:9872"), "127.0.0.1:9872");
  EXPECT_EQ(*HttpServer::ToCivetwebPorts("localhost:1"), "127.0.0.1:1");
  EXPECT_EQ(*HttpServer::ToCivetwebPorts("[::1]:9872"), "[::1]:9872");
  EXPECT_FALSE(HttpServer::ToCivetwebPorts("9872").ok());
  EXPECT_FALSE(HttpServer::ToCivetwebPorts(":99999").ok());
  EXPECT_FALSE(HttpServer::ToCivetwebPorts(":http").ok());
}

TEST(HttpServerTest, RoutesMethodsAndStatus) {
  std::atomic<int> calls{0};
  std::map<std::string, HttpHandler> routes;
  routes["/metrics"] = [&] {
    ++calls;
    return HttpResponse{200, "text/plain; version=0.0.4", "up 1\n"};
  };
  routes["/-/ready"] = [] { return HttpResponse{503, "text/plain", "starting\n"}; };
  auto server = HttpServer::Start("127.0.0.1:0", routes, 2);
  ASSERT_TRUE(server.ok()) << server.error().message;
  int port = (*server)->port();
  ASSERT_GT(port, 0);

  std::string ok = Get(port, "GET", "/metrics");
  EXPECT_NE(ok.find("200 OK"), std::string::npos);
  EXPECT_NE(ok.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  EXPECT_NE(ok.find("\r\n\r\nup 1\n"), std::string::npos);

  std::string head = Get(port, "HEAD", "/metrics");
  EXPECT_NE(head.find("Content-Length: 5"), std::string::npos);
  EXPECT_EQ(head.find("up 1"), std::string::npos);

  EXPECT_NE(Get(port, "GET", "/-/ready").find("503"), std::string::npos);
  EXPECT_NE(Get(port, "GET", "/nope").find("404"), std::string::npos);
  EXPECT_NE(Get(port, "POST", "/metrics").find("405"), std::string::npos);
  EXPECT_EQ(calls, 2);
}

TEST(HttpServerTest, PortInUseIsAClearError) {
  auto first = HttpServer::Start("127.0.0.1:0", {});
  ASSERT_TRUE(first.ok());
  std::string addr = "127.0.0.1:" + std::to_string((*first)->port());
  auto second = HttpServer::Start(addr, {});
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().message.find("cannot listen on " + addr), std::string::npos);
}

}  // namespace
}  // namespace rdmahd
