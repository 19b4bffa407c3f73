#include "daemon/http_server.h"

#include <arpa/inet.h>
#include <crypt.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "daemon/basic_auth.h"
#include "daemon/etag.h"

#include "tests/support/test_trees.h"

namespace rdmahd {
namespace {

using Clock = std::chrono::steady_clock;

int Connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// To ::1: a second client address next to 127.0.0.1 (the server must listen on both, ":0").
int Connect6(int port) {
  int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in6 addr{};
  addr.sin6_family = AF_INET6;
  addr.sin6_port = htons(static_cast<uint16_t>(port));
  addr.sin6_addr = in6addr_loopback;
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

void SendAll(int fd, const std::string& data) { (void)!write(fd, data.data(), data.size()); }

// Reads from `fd` until the server closes or `timeout` passes; `closed` says which.
std::string ReadUntilClosed(int fd, std::chrono::milliseconds timeout, bool* closed = nullptr) {
  std::string resp;
  char buf[4096];
  auto deadline = Clock::now() + timeout;
  if (closed) *closed = false;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) break;
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) {
      if (closed) *closed = true;
      break;
    }
    resp.append(buf, static_cast<size_t>(n));
  }
  return resp;
}

// Sends `request` as is and reads until the server closes or `timeout` passes.
std::string Exchange(int port, const std::string& request, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  int fd = Connect(port);
  if (fd < 0) return "connect failed";
  (void)!write(fd, request.data(), request.size());
  std::string resp;
  char buf[4096];
  auto deadline = Clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) break;
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    resp.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return resp;
}

std::string Get(int port, const std::string& method, const std::string& path, const std::string& headers = "") {
  return Exchange(port, method + " " + path + " HTTP/1.0\r\n" + headers + "\r\n");
}

std::string Body(const std::string& resp) {
  auto p = resp.find("\r\n\r\n");
  return p == std::string::npos ? "" : resp.substr(p + 4);
}

HttpServerOptions Local() {
  HttpServerOptions o;
  o.listen_address = "127.0.0.1:0";
  return o;
}

TEST(HttpServerTest, RoutesMethodsAndStatus) {
  std::atomic<int> calls{0};
  std::map<std::string, HttpRoute> routes;
  routes["/metrics"] = {[&] {
    ++calls;
    return HttpResponse{200, "text/plain; version=0.0.4", "up 1\n"};
  }};
  routes["/-/ready"] = {[] { return HttpResponse{503, "text/plain", "starting\n"}; }, true};
  auto server = HttpServer::Start(Local(), routes);
  ASSERT_TRUE(server.ok()) << server.error().message;
  int port = (*server)->port();
  ASSERT_GT(port, 0);

  // HTTP/1.0: no chunking, and the server closes the connection after the answer (Exchange
  // reads until EOF, so a server waiting for more would take its whole 5 s timeout).
  auto t0 = Clock::now();
  std::string ok = Get(port, "GET", "/metrics");
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(2));
  EXPECT_EQ(ok.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << ok;
  EXPECT_NE(ok.find("\r\nConnection: close\r\n"), std::string::npos) << ok;
  EXPECT_EQ(ok.find("chunked"), std::string::npos) << ok;
  EXPECT_NE(ok.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  EXPECT_NE(ok.find("\r\nDate: "), std::string::npos) << ok;
  EXPECT_EQ(Body(ok), "up 1\n");

  std::string head = Get(port, "HEAD", "/metrics");
  EXPECT_NE(head.find("Content-Length: 5"), std::string::npos) << head;
  EXPECT_EQ(Body(head), "");

  EXPECT_NE(Get(port, "GET", "/-/ready").find(" 503 "), std::string::npos);
  EXPECT_NE(Get(port, "GET", "/nope").find(" 404 "), std::string::npos);
  std::string post = Exchange(port, "POST /metrics HTTP/1.0\r\nContent-Length: 3\r\n\r\nabc");
  EXPECT_NE(post.find(" 405 "), std::string::npos) << post;
  EXPECT_NE(post.find("Allow: GET, HEAD"), std::string::npos) << post;
  EXPECT_EQ(calls, 2);
}

// Handlers get the query's arguments decoded and in order; the path alone picks the route; more
// arguments than kMaxQueryArguments, or a longer name or value, are a 400 that no handler sees.
TEST(HttpServerTest, HandlersGetTheDecodedQueryWithinBounds) {
  std::mutex mu;
  std::vector<QueryArgument> seen;
  std::atomic<int> calls{0};
  std::map<std::string, HttpRoute> routes;
  auto record = [&](const HttpRequest& r) {
    ++calls;
    std::lock_guard lock(mu);
    seen = r.query;
    return HttpResponse{200, "text/plain", "ok\n"};
  };
  routes["/"] = {record, RouteKind::kPage};
  routes["/-/inline"] = {record, RouteKind::kInline};
  auto server = HttpServer::Start(Local(), routes);
  ASSERT_TRUE(server.ok()) << server.error().message;
  const int port = (*server)->port();

  for (const std::string path : {"/", "/-/inline"}) {
    const std::string target = std::string(path).append("?status=failed%2Cwarning&device=mlx5_%3Cb%3E&flag&x=a+b");
    const std::string r = Get(port, "GET", target);
    EXPECT_EQ(r.rfind("HTTP/1.1 200 ", 0), 0u) << r;
    std::lock_guard lock(mu);
    ASSERT_EQ(seen.size(), 4u) << path;
    EXPECT_EQ(seen[0].name, "status");
    EXPECT_EQ(seen[0].value, "failed,warning");
    EXPECT_EQ(seen[1].value, "mlx5_<b>");
    EXPECT_EQ(seen[2].name, "flag");
    EXPECT_EQ(seen[2].value, "");
    EXPECT_EQ(seen[3].value, "a b");
  }
  const int before = calls;
  std::string many = "/?";
  for (std::size_t i = 0; i <= kMaxQueryArguments; ++i) {
    many.append("a").append(std::to_string(i)).append("=1&");
  }
  const std::string too_many = Get(port, "GET", many);
  EXPECT_EQ(too_many.rfind("HTTP/1.1 400 ", 0), 0u) << too_many;
  EXPECT_NE(Body(too_many).find("more than 16 query arguments"), std::string::npos) << too_many;
  const std::string long_value = Get(port, "GET", "/?device=" + std::string(kMaxQueryValueBytes + 1, 'x'));
  EXPECT_EQ(long_value.rfind("HTTP/1.1 400 ", 0), 0u) << long_value;
  EXPECT_NE(Body(long_value).find("value longer than 1024 bytes"), std::string::npos);
  EXPECT_EQ(Body(long_value).find("xxxx"), std::string::npos);  // the value is never echoed
  const std::string long_name = Get(port, "GET", "/?" + std::string(kMaxQueryNameBytes + 1, 'n') + "=1");
  EXPECT_EQ(long_name.rfind("HTTP/1.1 400 ", 0), 0u) << long_name;
  EXPECT_EQ(calls, before);
  // At the bounds: served.
  EXPECT_EQ(Get(port, "GET", "/?device=" + std::string(kMaxQueryValueBytes, 'x')).rfind("HTTP/1.1 200 ", 0), 0u);
  EXPECT_EQ(Get(port, "GET", "/nope?x=1").rfind("HTTP/1.1 404 ", 0), 0u);
}

TEST(HttpServerEtagTest, ResponseWithEtagIs304WhenTheClientHasIt) {
  std::atomic<int> calls{0};
  std::map<std::string, HttpRoute> routes;
  routes["/api"] = {[&] {
    ++calls;
    HttpResponse r{200, "application/json", "{\"x\": 1}\n"};
    r.etag = WeakEtag(r.body);
    return r;
  }};
  routes["/inline"] = {[] {
    HttpResponse r{200, "text/plain", "same\n"};
    r.etag = WeakEtag(r.body);
    return r;
  }, true};
  routes["/error"] = {[] {
    HttpResponse r{503, "text/plain", "starting\n"};
    r.etag = WeakEtag(r.body);
    return r;
  }};
  auto server = HttpServer::Start(Local(), routes);
  ASSERT_TRUE(server.ok()) << server.error().message;
  const int port = (*server)->port();
  for (const std::string path : {"/api", "/inline"}) {
    std::string first = Get(port, "GET", path);
    auto at = first.find("\r\nETag: ");
    ASSERT_NE(at, std::string::npos) << first;
    const std::string tag = first.substr(at + 8, first.find("\r\n", at + 2) - at - 8);
    EXPECT_NE(first.find("\r\nCache-Control: no-cache\r\n"), std::string::npos) << first;
    std::string again = Get(port, "GET", path, "If-None-Match: " + tag + "\r\n");
    EXPECT_EQ(again.rfind("HTTP/1.1 304 ", 0), 0u) << again;
    EXPECT_NE(again.find("\r\nETag: " + tag + "\r\n"), std::string::npos) << again;
    EXPECT_EQ(Body(again), "");
    std::string other = Get(port, "GET", path, "If-None-Match: \"other\"\r\n");
    EXPECT_EQ(other.rfind("HTTP/1.1 200 ", 0), 0u) << other;
    EXPECT_NE(Body(other), "");
  }
  // Only a 200 becomes a 304.
  EXPECT_EQ(Get(port, "GET", "/error", "If-None-Match: *\r\n").rfind("HTTP/1.1 503 ", 0), 0u);
  EXPECT_EQ(calls, 3);
}

TEST(HttpServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  std::map<std::string, HttpRoute> routes;
  routes["/metrics"] = {[] { return HttpResponse{200, "text/plain", "a 1\n"}; }};
  auto server = HttpServer::Start(Local(), routes);
  ASSERT_TRUE(server.ok());
  std::string two = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\nGET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  std::string resp = Exchange((*server)->port(), two);
  auto first = resp.find("HTTP/1.1 200 OK");
  ASSERT_NE(first, std::string::npos) << resp;
  EXPECT_NE(resp.find("HTTP/1.1 200 OK", first + 1), std::string::npos) << resp;
}

TEST(HttpServerTest, GzipWhenAskedAndOneCompressedCopyPerSharedBody) {
  auto text = std::make_shared<std::string>();
  for (int i = 0; i < 2000; ++i) *text += "rdma_port_rcv_data_bytes_total{device=\"mlx5_" + std::to_string(i) + "\"} 1\n";
  std::shared_ptr<const std::string> shared = text;
  std::shared_ptr<SharedBody> body = SharedBody::FromText(shared);
  std::map<std::string, HttpRoute> routes;
  routes["/metrics"] = {[body] { return HttpResponse{200, "text/plain", body}; }};
  auto server = HttpServer::Start(Local(), routes);
  ASSERT_TRUE(server.ok());
  int port = (*server)->port();

  std::string plain = Get(port, "GET", "/metrics");
  EXPECT_EQ(plain.find("Content-Encoding"), std::string::npos);
  EXPECT_NE(plain.find("Vary: Accept-Encoding"), std::string::npos);
  EXPECT_EQ(Body(plain), *shared);

  const long held = body.use_count();  // `body` and the routes' copies
  std::string gz = Get(port, "GET", "/metrics", "Accept-Encoding: gzip\r\n");
  EXPECT_NE(gz.find("Content-Encoding: gzip"), std::string::npos) << gz.substr(0, 300);
  EXPECT_NE(gz.find("Vary: Accept-Encoding"), std::string::npos);
  EXPECT_LT(Body(gz).size(), shared->size() / 4);
  EXPECT_EQ(testing::Gunzip(Body(gz)), *shared);
  EXPECT_EQ(Body(gz), *body->Gzipped());  // the copy every gzip request gets
  EXPECT_EQ(testing::Gunzip(Body(Get(port, "GET", "/metrics", "Accept-Encoding: deflate, gzip;q=0.5\r\n"))), *shared);

  // Once the responses are gone the server holds nothing of the body.
  for (int i = 0; i < 100 && body.use_count() != held; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(body.use_count(), held);

  EXPECT_EQ(Get(port, "GET", "/metrics", "Accept-Encoding: gzip;q=0\r\n").find("Content-Encoding"), std::string::npos);
  EXPECT_EQ(Get(port, "GET", "/metrics", "Accept-Encoding: identity\r\n").find("Content-Encoding"), std::string::npos);
  EXPECT_NE(Get(port, "GET", "/metrics", "Accept-Encoding: *\r\n").find("Content-Encoding: gzip"), std::string::npos);
}

// Over HTTP: a gzip request gets the compressed bytes as they are, a plain one the text, and
// neither leaves a text behind. A body under 1 KiB goes out plain to both, as any body does.
TEST(HttpServerTest, ABodyMadeCompressedIsServedInBothEncodings) {
  const std::string text = testing::MetricsText(3000);
  const std::string gzip = *Gzip(text);
  std::shared_ptr<SharedBody> body = SharedBody::FromGzip(gzip, text.size());
  const std::string tiny_text = "up 1\n";
  std::shared_ptr<SharedBody> tiny = SharedBody::FromGzip(*Gzip(tiny_text), tiny_text.size());
  std::map<std::string, HttpRoute> routes;
  routes["/metrics"] = {[body] { return HttpResponse{200, "text/plain", body}; }};
  routes["/tiny"] = {[tiny](const HttpRequest&) { return HttpResponse{200, "text/plain", tiny}; }};
  auto server = HttpServer::Start(Local(), routes);
  ASSERT_TRUE(server.ok());
  const int port = (*server)->port();

  const std::string gz = Get(port, "GET", "/metrics", "Accept-Encoding: gzip\r\n");
  EXPECT_NE(gz.find("Content-Encoding: gzip"), std::string::npos) << gz.substr(0, 300);
  EXPECT_EQ(Body(gz), gzip);
  const std::string plain = Get(port, "GET", "/metrics");
  EXPECT_EQ(plain.find("Content-Encoding"), std::string::npos);
  EXPECT_NE(plain.find("Content-Length: " + std::to_string(text.size())), std::string::npos) << plain.substr(0, 300);
  EXPECT_EQ(Body(plain), text);
  EXPECT_FALSE(body->text_in_memory());  // the decompressed text went with its response

  for (const char* headers : {"", "Accept-Encoding: gzip\r\n"}) {
    const std::string r = Get(port, "GET", "/tiny", headers);
    EXPECT_EQ(r.find("Content-Encoding"), std::string::npos) << r;
    EXPECT_EQ(Body(r), tiny_text);
  }
}

// The compressed copy starts at an eighth of the body and grows: a body that does not compress
// (here pseudo-random bytes) still comes back whole after several growths.
TEST(HttpServerTest, GzipOfABodyThatDoesNotCompressComesBackWhole) {
  auto text = std::make_shared<std::string>();
  std::uint32_t x = 2463534242u;
  for (int i = 0; i < 300000; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    text->push_back(static_cast<char>(x & 0xff));
  }
  std::shared_ptr<const std::string> shared = text;
  std::map<std::string, HttpRoute> routes;
  routes["/metrics"] = {[body = SharedBody::FromText(shared)] { return HttpResponse{200, "text/plain", body}; }};
  auto server = HttpServer::Start(Local(), routes);
  ASSERT_TRUE(server.ok());
  std::string gz = Get((*server)->port(), "GET", "/metrics", "Accept-Encoding: gzip\r\n");
  ASSERT_NE(gz.find("Content-Encoding: gzip"), std::string::npos) << gz.substr(0, 300);
  EXPECT_GT(Body(gz).size(), shared->size() / 2);
  EXPECT_EQ(testing::Gunzip(Body(gz)), *shared);
}

// A handler that blocks until released: /metrics in the middle of a long collection.
class Gate {
 public:
  void Wait() {
    std::unique_lock lock(mu_);
    ++waiting_;
    cv_.notify_all();
    cv_.wait(lock, [this] { return open_; });
  }
  void WaitForWaiters(int n) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(5), [&] { return waiting_ >= n; });
  }
  void Open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int waiting_ = 0;
  bool open_ = false;
};

TEST(HttpServerTest, CheapRoutesNeverQueueBehindSlowOnes) {
  Gate gate;
  std::map<std::string, HttpRoute> routes;
  routes["/metrics"] = {[&] {
    gate.Wait();
    return HttpResponse{200, "text/plain", "slow 1\n"};
  }};
  routes["/-/healthy"] = {[] { return HttpResponse{200, "text/plain", "OK\n"}; }, true};
  HttpServerOptions o = Local();
  o.workers = 2;
  auto server = HttpServer::Start(o, routes);
  ASSERT_TRUE(server.ok());
  int port = (*server)->port();

  // More stuck scrapes than workers.
  std::vector<std::thread> scrapes;
  std::vector<std::string> answers(4);
  for (int i = 0; i < 4; ++i) scrapes.emplace_back([&, i] { answers[i] = Get(port, "GET", "/metrics"); });
  gate.WaitForWaiters(2);
  auto t0 = Clock::now();
  std::string healthy = Get(port, "GET", "/-/healthy");
  auto took = Clock::now() - t0;
  EXPECT_NE(healthy.find(" 200 OK"), std::string::npos) << healthy;
  EXPECT_LT(took, std::chrono::milliseconds(500));
  gate.Open();
  for (auto& t : scrapes) t.join();
  for (const auto& a : answers) EXPECT_EQ(Body(a), "slow 1\n");
}

TEST(HttpServerTest, IdleSlowlorisAndSlowReadersDoNotBlockScrapes) {
  auto big = SharedBody::FromText(std::make_shared<const std::string>(4 << 20, 'x'));  // far more than a socket buffer
  std::map<std::string, HttpRoute> routes;
  routes["/big"] = {[big] { return HttpResponse{200, "text/plain", big}; }};
  routes["/metrics"] = {[] { return HttpResponse{200, "text/plain", "up 1\n"}; }};
  routes["/-/healthy"] = {[] { return HttpResponse{200, "text/plain", "OK\n"}; }, true};
  auto server = HttpServer::Start(Local(), routes);
  ASSERT_TRUE(server.ok());
  int port = (*server)->port();

  std::vector<int> held;
  for (int i = 0; i < 100; ++i) held.push_back(Connect(port));  // idle: never send a byte
  for (int i = 0; i < 30; ++i) {                                   // slowloris: a header never finished
    int fd = Connect(port);
    std::string part = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-a: ";
    (void)!write(fd, part.data(), part.size());
    held.push_back(fd);
  }
  for (int i = 0; i < 8; ++i) {  // slow readers: ask for a large body, never read it
    int fd = Connect(port);
    int small = 4096;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    std::string req = "GET /big HTTP/1.1\r\nHost: x\r\n\r\n";
    (void)!write(fd, req.data(), req.size());
    held.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  for (const char* path : {"/metrics", "/-/healthy"}) {
    auto t0 = Clock::now();
    std::string r = Get(port, "GET", path);
    auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
    EXPECT_NE(r.find(" 200 OK"), std::string::npos) << path << ": " << r;
    EXPECT_LT(took.count(), 500) << path;
  }
  for (int fd : held) {
    if (fd >= 0) close(fd);
  }
}

TEST(HttpServerTest, ConnectionCapIsFitToTheFdLimit) {
  HttpServerOptions o = Local();
  o.max_connections = 50;
  auto server = HttpServer::Start(o, {});
  ASSERT_TRUE(server.ok());
  EXPECT_LE((*server)->max_connections(), 50u);
  EXPECT_GE((*server)->max_connections(), 16u);
}

TEST(HttpServerTest, BadListenAddressAndPortInUseAreClearErrors) {
  HttpServerOptions bad = Local();
  bad.listen_address = "999.1.1.1:0";
  auto r = HttpServer::Start(bad, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("999.1.1.1"), std::string::npos);

  auto first = HttpServer::Start(Local(), {});
  ASSERT_TRUE(first.ok());
  HttpServerOptions same = Local();
  same.listen_address = "127.0.0.1:" + std::to_string((*first)->port());
  auto second = HttpServer::Start(same, {});
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().message.find("address " + same.listen_address + " is already in use"),
            std::string::npos)
      << second.error().message;
}

TEST(HttpServerTest, ShutdownAnswersQueuedRequestsAndReturns) {
  Gate gate;
  std::map<std::string, HttpRoute> routes;
  routes["/metrics"] = {[&] {
    gate.Wait();
    return HttpResponse{200, "text/plain", "late\n"};
  }};
  HttpServerOptions o = Local();
  o.workers = 1;
  auto server = HttpServer::Start(o, routes);
  ASSERT_TRUE(server.ok());
  int port = (*server)->port();
  std::vector<std::thread> scrapes;
  std::vector<std::string> answers(3);
  for (int i = 0; i < 3; ++i) scrapes.emplace_back([&, i] { answers[i] = Get(port, "GET", "/metrics"); });
  gate.WaitForWaiters(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the other two are queued
  auto t0 = Clock::now();
  std::thread stopper([&] { server.value().reset(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  gate.Open();
  stopper.join();
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(2));
  for (auto& t : scrapes) t.join();
  // The scrape in progress is answered; the queued ones get a 503 (nothing waits for a handler
  // that never started).
  int late = 0, refused = 0;
  for (const auto& a : answers) {
    late += Body(a) == "late\n";
    refused += a.find(" 503 ") != std::string::npos;
  }
  EXPECT_EQ(late, 1);
  EXPECT_EQ(refused, 2);
}

std::string BasicHeader(const std::string& user, const std::string& password) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string in = user + ":" + password, out;
  int val = 0, bits = -6;
  for (unsigned char c : in) {
    val = (val << 8) + c;
    bits += 8;
    while (bits >= 0) {
      out.push_back(k[(val >> bits) & 0x3F]);
      bits -= 6;
    }
  }
  if (bits > -6) out.push_back(k[((val << 8) >> (bits + 8)) & 0x3F]);
  while (out.size() % 4) out.push_back('=');
  return "Authorization: Basic " + out + "\r\n";
}

std::string MakeBcrypt(const std::string& password) {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  EXPECT_NE(crypt_gensalt_rn("$2b$", 4, nullptr, 0, salt, sizeof salt), nullptr);
  crypt_data data{};
  const char* h = crypt_rn(password.c_str(), salt, &data, sizeof data);
  return h ? h : "";
}

TEST(HttpServerTest, BasicAuthGuardsEveryRoute) {
  HttpServerOptions o = Local();
  o.web = WebConfig{};
  o.web->basic_auth_users["alice"] = MakeBcrypt("s3cret");
  std::map<std::string, HttpRoute> routes;
  routes["/metrics"] = {[] { return HttpResponse{200, "text/plain", "up 1\n"}; }};
  routes["/-/healthy"] = {[] { return HttpResponse{200, "text/plain", "OK\n"}; }, true};
  auto server = HttpServer::Start(o, routes);
  ASSERT_TRUE(server.ok());
  int port = (*server)->port();
  for (const char* path : {"/metrics", "/-/healthy", "/nope"}) {
    std::string none = Get(port, "GET", path);
    EXPECT_NE(none.find(" 401 "), std::string::npos) << path << none;
    EXPECT_NE(none.find("WWW-Authenticate: Basic"), std::string::npos) << none;
    EXPECT_NE(Get(port, "GET", path, BasicHeader("alice", "wrong")).find(" 401 "), std::string::npos);
    EXPECT_NE(Get(port, "GET", path, BasicHeader("bob", "s3cret")).find(" 401 "), std::string::npos);
  }
  for (int i = 0; i < 2; ++i) {  // the second time from the cache
    EXPECT_EQ(Body(Get(port, "GET", "/metrics", BasicHeader("alice", "s3cret"))), "up 1\n");
    EXPECT_EQ(Body(Get(port, "GET", "/-/healthy", BasicHeader("alice", "s3cret"))), "OK\n");
  }
  EXPECT_NE(Get(port, "GET", "/nope", BasicHeader("alice", "s3cret")).find(" 404 "), std::string::npos);
}

TEST(HttpServerBasicAuthTest, CachesOnlySuccesses) {
  BasicAuth auth({{"alice", MakeBcrypt("pw")}});
  EXPECT_TRUE(auth.enabled());
  EXPECT_FALSE(auth.Cached("alice", "pw"));
  EXPECT_FALSE(auth.Verify("alice", "nope"));
  EXPECT_FALSE(auth.Cached("alice", "nope"));
  EXPECT_TRUE(auth.Verify("alice", "pw"));
  EXPECT_TRUE(auth.Cached("alice", "pw"));
  EXPECT_FALSE(auth.Cached("alice", "pw2"));
  EXPECT_FALSE(auth.Verify("mallory", "pw"));
  EXPECT_FALSE(BasicAuth({}).enabled());
}

std::map<std::string, HttpRoute> HealthyAndMetrics(std::atomic<int>* metrics_calls = nullptr) {
  std::map<std::string, HttpRoute> routes;
  routes["/metrics"] = {[metrics_calls] {
    if (metrics_calls) ++*metrics_calls;
    return HttpResponse{200, "text/plain", "up 1\n"};
  }};
  routes["/-/healthy"] = {[] { return HttpResponse{200, "text/plain", "OK\n"}; }, true};
  return routes;
}

// Clients that send part of a request and close: each must give its slot back at once, not at the
// idle timeout (libmicrohttpd alone leaves many in CLOSE-WAIT until then, and they fill the cap).
TEST(HttpServerConnectionsTest, HalfRequestsThenFinFreeTheirSlotsAtOnce) {
  HttpServerOptions o = Local();
  o.max_connections = 64;
  o.max_connections_per_client = 64;  // this test is about the FIN, not the per-client cap
  auto server = HttpServer::Start(o, HealthyAndMetrics());
  ASSERT_TRUE(server.ok()) << server.error().message;
  int port = (*server)->port();
  for (int i = 0; i < 400; ++i) {  // many times the cap, as fast as the loop goes
    int fd = Connect(port);
    ASSERT_GE(fd, 0);
    SendAll(fd, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-a: ");
    close(fd);
  }
  auto t0 = Clock::now();
  std::string r = Exchange(port, "GET /-/healthy HTTP/1.0\r\n\r\n", std::chrono::seconds(3));
  auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
  EXPECT_NE(r.find(" 200 OK"), std::string::npos) << "no answer within 3 s after the burst: " << r;
  EXPECT_LT(took.count(), 1500);
}

// The FIN rule must not cut off a client that sent a whole request and then half-closed
// (HTTP/1.0 style, as `nc -N` does): its answer still comes.
TEST(HttpServerConnectionsTest, CompleteRequestThenFinIsStillAnswered) {
  auto server = HttpServer::Start(Local(), HealthyAndMetrics());
  ASSERT_TRUE(server.ok());
  for (const char* path : {"/-/healthy", "/metrics"}) {
    int fd = Connect((*server)->port());
    ASSERT_GE(fd, 0);
    SendAll(fd, std::string("GET ") + path + " HTTP/1.0\r\n\r\n");
    shutdown(fd, SHUT_WR);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // past two sweeps
    std::string r = ReadUntilClosed(fd, std::chrono::seconds(3));
    close(fd);
    EXPECT_NE(r.find(" 200 OK"), std::string::npos) << path << ": " << r;
  }
}

// A header trickled a byte at a time is closed at the header deadline, although bytes keep moving
// (the idle timeout never fires); a keep-alive connection idle between requests is not.
TEST(HttpServerConnectionsTest, HeaderDeadlineClosesSlowHeadersButNotIdleKeepAlive) {
  HttpServerOptions o = Local();
  o.header_timeout_seconds = 1;
  auto server = HttpServer::Start(o, HealthyAndMetrics());
  ASSERT_TRUE(server.ok());
  int port = (*server)->port();

  int keep = Connect(port);  // one request answered, then idle
  SendAll(keep, "GET /-/healthy HTTP/1.1\r\nHost: x\r\n\r\n");
  pollfd p{keep, POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 2000), 1);
  char buf[512];
  ASSERT_GT(read(keep, buf, sizeof buf), 0);

  int slow = Connect(port);
  SendAll(slow, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-a: ");
  auto t0 = Clock::now();
  bool closed = false;
  while (!closed && Clock::now() - t0 < std::chrono::seconds(4)) {
    SendAll(slow, "a");
    ReadUntilClosed(slow, std::chrono::milliseconds(200), &closed);
  }
  auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
  close(slow);
  EXPECT_TRUE(closed) << "a header trickled for 4 s was not cut off";
  EXPECT_GE(took.count(), 800);
  EXPECT_LT(took.count(), 2500);

  // Still open and still served, past the header deadline.
  SendAll(keep, "GET /-/healthy HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  std::string again = ReadUntilClosed(keep, std::chrono::seconds(3));
  close(keep);
  EXPECT_NE(again.find(" 200 OK"), std::string::npos) << again;
}

// One client address holding many idle connections leaves room for others.
TEST(HttpServerConnectionsTest, OneClientCannotTakeEverySlot) {
  int probe = socket(AF_INET6, SOCK_STREAM, 0);
  if (probe < 0) GTEST_SKIP() << "no IPv6";
  close(probe);
  HttpServerOptions o = Local();
  o.listen_address = ":0";  // 127.0.0.1 and ::1: two client addresses
  o.max_connections = 32;
  auto server = HttpServer::Start(o, HealthyAndMetrics());
  ASSERT_TRUE(server.ok()) << server.error().message;
  EXPECT_EQ((*server)->max_connections_per_client(), 8u);
  int port = (*server)->port();
  std::vector<int> held;
  for (int i = 0; i < 40; ++i) held.push_back(Connect(port));  // idle: never a byte
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  int fd = Connect6(port);
  ASSERT_GE(fd, 0);
  auto t0 = Clock::now();
  SendAll(fd, "GET /-/healthy HTTP/1.0\r\n\r\n");
  std::string r = ReadUntilClosed(fd, std::chrono::seconds(3));
  auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
  close(fd);
  EXPECT_NE(r.find(" 200 OK"), std::string::npos) << "::1 got no answer while 127.0.0.1 held 40: " << r;
  EXPECT_LT(took.count(), 1000);
  for (int h : held) {
    if (h >= 0) close(h);
  }
}

// RFC 9112 6.1: Content-Length with Transfer-Encoding is refused and the connection closed, so the
// bytes after the body are never read as a second (smuggled) request.
TEST(HttpServerFramingTest, ContentLengthWithTransferEncodingIsRefusedAndClosed) {
  std::atomic<int> calls{0};
  auto server = HttpServer::Start(Local(), HealthyAndMetrics(&calls));
  ASSERT_TRUE(server.ok());
  auto t0 = Clock::now();
  std::string r = Exchange((*server)->port(),
                           "POST /-/healthy HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                           "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
                           "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
                           std::chrono::seconds(3));
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(1)) << "the connection was kept open";
  EXPECT_EQ(r.rfind("HTTP/1.1 400 ", 0), 0u) << r;
  EXPECT_NE(r.find("Connection: close"), std::string::npos) << r;
  EXPECT_EQ(r.find("HTTP/1.1", 1), std::string::npos) << "a second response: " << r;
  EXPECT_EQ(calls, 0);
}

TEST(HttpServerFramingTest, TransferEncodingOtherThanChunkedIsRefusedAtOnce) {
  auto server = HttpServer::Start(Local(), HealthyAndMetrics());
  ASSERT_TRUE(server.ok());
  for (const char* te : {"gzip, chunked", "gzip", "chunked, chunked"}) {
    auto t0 = Clock::now();
    std::string r = Exchange((*server)->port(),
                             std::string("POST /-/healthy HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: ") + te +
                                 "\r\n\r\n0\r\n\r\n",
                             std::chrono::seconds(3));
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(1)) << te;
    EXPECT_EQ(r.rfind("HTTP/1.1 400 ", 0), 0u) << te << ": " << r;
  }
  // Plain chunked is still fine (the body is read and dropped; the method is not allowed).
  std::string ok = Exchange((*server)->port(),
                            "POST /-/healthy HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                            "Connection: close\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
                            std::chrono::seconds(3));
  EXPECT_EQ(ok.rfind("HTTP/1.1 405 ", 0), 0u) << ok;
}

TEST(HttpServerFramingTest, NulInTheTargetIsRefused) {
  std::atomic<int> calls{0};
  auto server = HttpServer::Start(Local(), HealthyAndMetrics(&calls));
  ASSERT_TRUE(server.ok());
  for (const char* target : {"/metrics%00x", "/metrics%00", "/metrics?x=%00"}) {
    std::string r = Get((*server)->port(), "GET", target);
    EXPECT_EQ(r.rfind("HTTP/1.1 400 ", 0), 0u) << target << ": " << r;
  }
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(Body(Get((*server)->port(), "GET", "/metrics")), "up 1\n");
}

// Requests whose body is cut short, then FIN: a Content-Length body short of its length, a chunk
// cut mid-way. libmicrohttpd alone keeps each in CLOSE-WAIT until the idle timeout (60 s); here
// each gives its slot back within a second, so a burst of them filling every slot leaves
// /-/healthy answered.
TEST(HttpServerConnectionsTest, CutBodiesThenFinFreeTheirSlotsAtOnce) {
  HttpServerOptions o = Local();
  o.max_connections = 32;
  o.max_connections_per_client = 32;  // this test is about the FIN, not the per-client cap
  auto server = HttpServer::Start(o, HealthyAndMetrics());
  ASSERT_TRUE(server.ok()) << server.error().message;
  const int port = (*server)->port();
  const std::string cut[] = {
      "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789",
      "POST /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n64\r\n0123456789",
      "GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n",
  };
  std::vector<int> fds;
  for (int i = 0; i < 32; ++i) {  // every slot
    int fd = Connect(port);
    ASSERT_GE(fd, 0);
    SendAll(fd, cut[i % 3]);
    shutdown(fd, SHUT_WR);  // the FIN comes with the last bytes, as from a client that gave up
    fds.push_back(fd);
  }
  auto t0 = Clock::now();
  int still_open = 0;
  for (int fd : fds) {
    auto left = std::chrono::milliseconds(1000) -
                std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
    bool closed = false;
    ReadUntilClosed(fd, std::max(left, std::chrono::milliseconds(1)), &closed);
    if (!closed) ++still_open;
  }
  EXPECT_EQ(still_open, 0) << "cut bodies still held by the server 1 s after their FIN";
  auto t1 = Clock::now();
  std::string r = Exchange(port, "GET /-/healthy HTTP/1.0\r\n\r\n", std::chrono::seconds(3));
  EXPECT_NE(r.find(" 200 OK"), std::string::npos) << "no answer after the burst: " << r;
  EXPECT_LT(Clock::now() - t1, std::chrono::milliseconds(1500));
  for (int fd : fds) close(fd);
}

// The FIN rule for bodies must not cut off a client that sent a whole body and half-closed.
TEST(HttpServerConnectionsTest, CompleteBodyThenFinIsStillAnswered) {
  auto server = HttpServer::Start(Local(), HealthyAndMetrics());
  ASSERT_TRUE(server.ok());
  for (const char* req : {"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc",
                          "POST /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"}) {
    int fd = Connect((*server)->port());
    ASSERT_GE(fd, 0);
    SendAll(fd, req);
    shutdown(fd, SHUT_WR);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // past two sweeps
    std::string r = ReadUntilClosed(fd, std::chrono::seconds(3));
    close(fd);
    EXPECT_EQ(r.rfind("HTTP/1.1 405 ", 0), 0u) << req << ": " << r;
  }
}

// A body trickled a byte at a time is closed at the body deadline, although bytes keep moving.
TEST(HttpServerConnectionsTest, BodyDeadlineClosesSlowBodies) {
  HttpServerOptions o = Local();
  o.body_timeout_seconds = 1;
  auto server = HttpServer::Start(o, HealthyAndMetrics());
  ASSERT_TRUE(server.ok());
  for (const char* head : {"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n",
                           "POST /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n100000\r\n"}) {
    int slow = Connect((*server)->port());
    ASSERT_GE(slow, 0);
    SendAll(slow, head);
    auto t0 = Clock::now();
    bool closed = false;
    while (!closed && Clock::now() - t0 < std::chrono::seconds(4)) {
      SendAll(slow, "a");
      ReadUntilClosed(slow, std::chrono::milliseconds(200), &closed);
    }
    auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
    close(slow);
    EXPECT_TRUE(closed) << head << ": a body trickled for 4 s was not cut off";
    EXPECT_GE(took.count(), 800) << head;
    EXPECT_LT(took.count(), 2500) << head;
  }
}

// RFC 9112 6.3: Content-Length headers that disagree are a framing error: 400 and close, never
// the first one's body with the rest read as a second (smuggled) request. Identical duplicates are
// refused too: no client needs them, and a proxy may have read them another way.
TEST(HttpServerFramingTest, DuplicateContentLengthsAreRefusedAndClosed) {
  std::atomic<int> calls{0};
  auto server = HttpServer::Start(Local(), HealthyAndMetrics(&calls));
  ASSERT_TRUE(server.ok());
  for (const char* lengths : {"Content-Length: 0\r\nContent-Length: 35\r\n",
                              "Content-Length: 35\r\nContent-Length: 0\r\n",
                              "Content-Length: 0\r\ncontent-length: 0\r\n"}) {
    auto t0 = Clock::now();
    std::string r = Exchange((*server)->port(),
                             std::string("POST /-/healthy HTTP/1.1\r\nHost: x\r\n") + lengths +
                                 "\r\nGET /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
                             std::chrono::seconds(3));
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(1)) << lengths << ": the connection was kept open";
    EXPECT_EQ(r.rfind("HTTP/1.1 400 ", 0), 0u) << lengths << r;
    EXPECT_NE(r.find("Connection: close"), std::string::npos) << lengths << r;
    EXPECT_EQ(r.find("HTTP/1.1", 1), std::string::npos) << lengths << "a second response: " << r;
  }
  // A list in one field is refused by libmicrohttpd itself, before any callback (0.9.75 sends its
  // 400 twice over, then closes: still no second request read).
  std::string list = Exchange((*server)->port(),
                              "POST /-/healthy HTTP/1.1\r\nHost: x\r\nContent-Length: 0, 35\r\n\r\n"
                              "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
                              std::chrono::seconds(3));
  EXPECT_EQ(list.rfind("HTTP/1.1 400 ", 0), 0u) << list;
  EXPECT_NE(list.find("Connection: close"), std::string::npos) << list;
  EXPECT_EQ(calls, 0);
}

// RFC 9112 5.1: no whitespace between a field name and its colon; such a header must be refused,
// not ignored ("Transfer-Encoding : chunked" ignored would read the chunks as a second request).
TEST(HttpServerFramingTest, WhitespaceBeforeTheColonIsRefused) {
  std::atomic<int> calls{0};
  auto server = HttpServer::Start(Local(), HealthyAndMetrics(&calls));
  ASSERT_TRUE(server.ok());
  for (const char* field : {"Transfer-Encoding : chunked", "Transfer-Encoding\t: chunked",
                            "Content-Length : 35", "X-Anything : 1"}) {
    auto t0 = Clock::now();
    std::string r = Exchange((*server)->port(),
                             std::string("POST /-/healthy HTTP/1.1\r\nHost: x\r\n") + field +
                                 "\r\n\r\n23\r\nGET /metrics HTTP/1.1\r\nHost: x\r\n\r\n\r\n0\r\n\r\n",
                             std::chrono::seconds(3));
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(1)) << field << ": the connection was kept open";
    EXPECT_EQ(r.rfind("HTTP/1.1 400 ", 0), 0u) << field << ": " << r;
    EXPECT_EQ(r.find("HTTP/1.1", 1), std::string::npos) << field << ": a second response: " << r;
  }
  EXPECT_EQ(calls, 0);
}

// Every answer tells browsers not to sniff its type and not to show it in a frame (the status
// page's <meta> CSP cannot say frame-ancestors); the policy is the page's own plus that.
TEST(HttpServerHeadersTest, EveryAnswerForbidsSniffingAndFraming) {
  std::map<std::string, HttpRoute> routes = HealthyAndMetrics();
  routes["/api"] = {[] {
    HttpResponse r{200, "application/json", "{}\n"};
    r.etag = WeakEtag(r.body);
    return r;
  }};
  auto server = HttpServer::Start(Local(), routes);
  ASSERT_TRUE(server.ok());
  EXPECT_EQ(std::string(kContentSecurityPolicy), "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'");
  for (const char* path : {"/api", "/metrics", "/-/healthy", "/nope"}) {
    std::string r = Get((*server)->port(), "GET", path);
    EXPECT_NE(r.find("\r\nX-Content-Type-Options: nosniff\r\n"), std::string::npos) << path << ": " << r;
    EXPECT_NE(r.find(std::string("\r\nContent-Security-Policy: ") + kContentSecurityPolicy + "\r\n"),
              std::string::npos)
        << path << ": " << r;
  }
  // Without basic auth a body with an ETag may be kept and revalidated.
  EXPECT_NE(Get((*server)->port(), "GET", "/api").find("\r\nCache-Control: no-cache\r\n"), std::string::npos);
}

// Answers behind basic auth are never stored by a browser or proxy, ETag or not.
TEST(HttpServerHeadersTest, AuthenticatedAnswersAreNeverStored) {
  HttpServerOptions o = Local();
  o.web = WebConfig{};
  o.web->basic_auth_users["alice"] = MakeBcrypt("s3cret");
  std::map<std::string, HttpRoute> routes;
  routes["/api"] = {[] {
    HttpResponse r{200, "application/json", "{}\n"};
    r.etag = WeakEtag(r.body);
    return r;
  }};
  routes["/-/healthy"] = {[] { return HttpResponse{200, "text/plain", "OK\n"}; }, true};
  auto server = HttpServer::Start(o, routes);
  ASSERT_TRUE(server.ok());
  for (int i = 0; i < 2; ++i) {  // the first after a bcrypt, the second from the cache
    for (const char* path : {"/api", "/-/healthy"}) {
      std::string r = Get((*server)->port(), "GET", path, BasicHeader("alice", "s3cret"));
      EXPECT_EQ(r.rfind("HTTP/1.1 200 ", 0), 0u) << path << ": " << r;
      EXPECT_NE(r.find("\r\nCache-Control: no-store\r\n"), std::string::npos) << path << ": " << r;
      EXPECT_NE(r.find("\r\nX-Content-Type-Options: nosniff\r\n"), std::string::npos) << path << ": " << r;
    }
  }
  EXPECT_NE(Get((*server)->port(), "GET", "/api").find("\r\nCache-Control: no-store\r\n"), std::string::npos);
}


// From a loopback address of its own (127.0.0.2, ...): another client as the server counts them.
int ConnectFrom(int port, const std::string& source) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in from{};
  from.sin_family = AF_INET;
  inet_pton(AF_INET, source.c_str(), &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0 ||
      connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

// Idle connections (never a byte) filling every slot, from several addresses each under its cap:
// the oldest idle one is shed for a newcomer, which is answered at once instead of waiting in the
// accept queue for the header deadline; connections with a request line in are kept.
TEST(HttpServerConnectionsTest, IdleConnectionsFillingEverySlotAreShedForNewcomers) {
  HttpServerOptions o = Local();
  o.max_connections = 32;
  o.max_connections_per_client = 12;
  auto server = HttpServer::Start(o, HealthyAndMetrics());
  ASSERT_TRUE(server.ok()) << server.error().message;
  const int port = (*server)->port();
  int busy = ConnectFrom(port, "127.0.0.9");  // a request line in, its header still coming
  ASSERT_GE(busy, 0);
  SendAll(busy, "GET /metrics HTTP/1.1\r\nHost: x\r\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::vector<int> idle;
  for (const char* source : {"127.0.0.2", "127.0.0.3", "127.0.0.4"}) {
    for (int i = 0; i < 12; ++i) idle.push_back(ConnectFrom(port, source));  // 36: more than the slots
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  for (const char* path : {"/-/healthy", "/metrics"}) {
    auto t0 = Clock::now();
    std::string r = Exchange(port, std::string("GET ") + path + " HTTP/1.0\r\n\r\n", std::chrono::seconds(3));
    auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
    EXPECT_NE(r.find(" 200 OK"), std::string::npos) << path << ": no answer while idle connections hold every slot";
    EXPECT_LT(took.count(), 1000) << path;
  }
  // The one with a request in hand was not shed: its request completes and is answered.
  SendAll(busy, "Connection: close\r\n\r\n");
  std::string r = ReadUntilClosed(busy, std::chrono::seconds(3));
  EXPECT_NE(r.find(" 200 OK"), std::string::npos) << r;
  close(busy);
  // The oldest idle connections went first.
  bool first_closed = false;
  ReadUntilClosed(idle.front(), std::chrono::milliseconds(100), &first_closed);
  EXPECT_TRUE(first_closed) << "the oldest idle connection was kept";
  for (int fd : idle) {
    if (fd >= 0) close(fd);
  }
}

// A hash of `cost` that no password matches, made without paying for it: checking a password
// against it still costs the full bcrypt of that cost (cost 16: seconds), so a check of it is
// still running whenever a test looks.
std::string SlowBcryptNoPasswordMatches(int cost) {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  EXPECT_NE(crypt_gensalt_rn("$2b$", static_cast<unsigned long>(cost), nullptr, 0, salt, sizeof salt), nullptr);
  return std::string(salt) + std::string(31, '.');
}

// A wrong-password request sent and left waiting for its answer.
struct PendingRequest {
  int fd = -1;
  explicit PendingRequest(int port, const std::string& source, const std::string& auth_header) {
    fd = ConnectFrom(port, source);
    if (fd >= 0) SendAll(fd, "GET /metrics HTTP/1.0\r\n" + auth_header + "\r\n");
  }
  ~PendingRequest() {
    if (fd >= 0) close(fd);
  }
  bool AnswerIn(std::chrono::milliseconds within) const {
    pollfd p{fd, POLLIN, 0};
    return poll(&p, 1, static_cast<int>(within.count())) > 0;
  }
  std::string Answer(std::chrono::milliseconds timeout) const { return ReadUntilClosed(fd, timeout); }
};

// Remembered credentials never wait for a bcrypt: with every password-check slot taken by
// wrong passwords that take seconds each, the remembered user's scrapes are answered at once,
// and the flood is answered too (refused at once past the bounds).
TEST(HttpServerAuthTest, RememberedCredentialsAreServedWhilePasswordChecksRun) {
  HttpServerOptions o = Local();
  o.web = WebConfig{};
  // Unknown users are checked against the first user's hash (so their timing tells nothing):
  // "aaa"'s slow hash makes every check of an unknown user take seconds.
  o.web->basic_auth_users["aaa"] = SlowBcryptNoPasswordMatches(16);
  o.web->basic_auth_users["prometheus"] = MakeBcrypt("right");
  std::atomic<int> calls{0};
  auto server = HttpServer::Start(o, HealthyAndMetrics(&calls));
  ASSERT_TRUE(server.ok()) << server.error().message;
  const int port = (*server)->port();
  const std::string right = BasicHeader("prometheus", "right");
  ASSERT_EQ(Body(Get(port, "GET", "/metrics", right)), "up 1\n");  // verified once: remembered

  // 10 addresses x 3 requests: more than any client's share and than the whole queue.
  std::vector<std::unique_ptr<PendingRequest>> flood;
  for (int client = 0; client < 10; ++client) {
    for (int i = 0; i < 3; ++i) {
      flood.push_back(std::make_unique<PendingRequest>(port, "127.0.0." + std::to_string(2 + client),
                                                       BasicHeader("mallory", "guess" + std::to_string(i))));
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));

  std::vector<long> ms;
  for (int i = 0; i < 10; ++i) {
    auto t0 = Clock::now();
    std::string r = Exchange(port, "GET /metrics HTTP/1.0\r\n" + right + "\r\n", std::chrono::seconds(5));
    ms.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count());
    EXPECT_EQ(Body(r), "up 1\n") << "scrape " << i << " of the remembered user: " << r;
  }
  std::sort(ms.begin(), ms.end());
  EXPECT_LT(ms[ms.size() / 2], 300) << "median of the remembered user's scrapes, ms";
  EXPECT_LT(ms.back(), 2000) << "slowest of the remembered user's scrapes, ms";

  // The flood was answered too: every request past the bounds at once (429 or 503, Retry-After),
  // the rest (in the queue) when the server stops.
  int refused_at_once = 0;
  for (auto& f : flood) {
    if (!f->AnswerIn(std::chrono::milliseconds(0))) continue;
    std::string a = f->Answer(std::chrono::seconds(1));
    EXPECT_TRUE(a.find(" 429 ") != std::string::npos || a.find(" 503 ") != std::string::npos) << a;
    EXPECT_NE(a.find("Retry-After: 1"), std::string::npos) << a;
    ++refused_at_once;
  }
  EXPECT_GE(refused_at_once, static_cast<int>(flood.size()) - 16);
  server->reset();
  for (auto& f : flood) {
    std::string a = f->Answer(std::chrono::seconds(2));
    EXPECT_EQ(a.find(" 200 "), std::string::npos) << a;
  }
  EXPECT_EQ(calls, 11);  // the remembered user's scrapes only
}

// One client address may have `per_client` checks waiting or running, all clients `capacity`;
// past either the answer comes at once, with Retry-After. Once the server stops, checks still
// waiting or running are answered 503.
TEST(HttpServerAuthTest, PasswordChecksAreBoundedPerClientAndInTotal) {
  HttpServerOptions o = Local();
  o.web = WebConfig{};
  o.web->basic_auth_users["alice"] = SlowBcryptNoPasswordMatches(16);
  o.password_checks.per_client = 2;
  o.password_checks.capacity = 4;
  auto server = HttpServer::Start(o, HealthyAndMetrics());
  ASSERT_TRUE(server.ok()) << server.error().message;
  const int port = (*server)->port();
  const std::string wrong = BasicHeader("alice", "wrong");

  std::vector<std::unique_ptr<PendingRequest>> accepted;
  for (const char* source : {"127.0.0.1", "127.0.0.1", "127.0.0.2", "127.0.0.2"}) {
    accepted.push_back(std::make_unique<PendingRequest>(port, source, wrong));
    ASSERT_GE(accepted.back()->fd, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // taken in this order
  }
  auto refused = [&](const std::string& source) {
    PendingRequest r(port, source, wrong);
    auto t0 = Clock::now();
    std::string a = r.Answer(std::chrono::seconds(5));
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(1)) << source << " waited for its refusal";
    EXPECT_NE(a.find("Retry-After: 1"), std::string::npos) << a;
    return a;
  };
  std::string busy = refused("127.0.0.1");  // its third: over its share
  EXPECT_NE(busy.find(" 429 "), std::string::npos) << busy;
  std::string full = refused("127.0.0.3");  // its first, but four are waiting or running
  EXPECT_NE(full.find(" 503 "), std::string::npos) << full;
  EXPECT_NE(full.find("password checks waiting"), std::string::npos) << full;

  for (auto& a : accepted) EXPECT_FALSE(a->AnswerIn(std::chrono::milliseconds(0))) << "answered before its check";
  server->reset();
  for (auto& a : accepted) {
    std::string answer = a->Answer(std::chrono::seconds(2));
    EXPECT_NE(answer.find(" 503 "), std::string::npos) << answer;
    EXPECT_NE(answer.find("shutting down"), std::string::npos) << answer;
  }
}

// crypt_rn cannot be interrupted: stopping the server does not wait for a bcrypt that is running.
TEST(HttpServerAuthTest, StopDoesNotWaitForARunningPasswordCheck) {
  HttpServerOptions o = Local();
  o.web = WebConfig{};
  o.web->basic_auth_users["alice"] = SlowBcryptNoPasswordMatches(16);
  auto server = HttpServer::Start(o, HealthyAndMetrics());
  ASSERT_TRUE(server.ok()) << server.error().message;
  PendingRequest running((*server)->port(), "127.0.0.1", BasicHeader("alice", "wrong"));
  PendingRequest waiting((*server)->port(), "127.0.0.2", BasicHeader("alice", "wrong"));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the first one's bcrypt is running
  auto t0 = Clock::now();
  server->reset();
  auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
  EXPECT_LT(took.count(), 1000) << "the server waited for a bcrypt";
  for (const PendingRequest* r : {&running, &waiting}) {
    std::string a = r->Answer(std::chrono::seconds(2));
    EXPECT_NE(a.find(" 503 "), std::string::npos) << a;
  }
}

// A handler that blocks while the gate is shut, counting its calls and how many ran at once.
class CountingGate {
 public:
  HttpResponse Pass(std::string body) {
    std::unique_lock lock(mu_);
    ++calls_;
    max_inside_ = std::max(max_inside_, ++inside_);
    cv_.notify_all();
    cv_.wait(lock, [this] { return open_; });
    --inside_;
    return HttpResponse{200, "text/plain", std::move(body)};
  }
  bool WaitForCalls(int n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(5), [&] { return calls_ >= n; });
  }
  void Open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  int calls() {
    std::lock_guard lock(mu_);
    return calls_;
  }
  int max_inside() {
    std::lock_guard lock(mu_);
    return max_inside_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int calls_ = 0, inside_ = 0, max_inside_ = 0;
  bool open_ = false;
};

// Sends a whole request on a new connection and closes it at once (FIN): a client that left.
void SendAndLeave(int port, const std::string& path) {
  int fd = Connect(port);
  ASSERT_GE(fd, 0);
  SendAll(fd, "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n");
  close(fd);
}

// / and the API take at most one of the two workers, so /metrics is answered while pages are
// stuck (in a collection or a render of megabytes), however many are queued.
TEST(HttpServerClientsThatLeftTest, ScrapesAreAnsweredWhilePagesHoldTheirWorkers) {
  CountingGate pages;
  std::map<std::string, HttpRoute> routes;
  routes["/"] = {[&] { return pages.Pass("page\n"); }, RouteKind::kPage};
  routes["/api/v1/checks"] = {[&] { return pages.Pass("{}\n"); }, RouteKind::kPage};
  routes["/metrics"] = {[] { return HttpResponse{200, "text/plain", "up 1\n"}; }};
  HttpServerOptions o = Local();
  o.workers = 2;
  auto server = HttpServer::Start(o, routes);
  ASSERT_TRUE(server.ok());
  const int port = (*server)->port();

  std::vector<std::thread> clients;
  std::vector<std::string> answers(4);
  for (int i = 0; i < 4; ++i) {
    clients.emplace_back([&, i] { answers[i] = Get(port, "GET", i % 2 ? "/" : "/api/v1/checks"); });
  }
  ASSERT_TRUE(pages.WaitForCalls(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // time for a second page to start, if it could
  for (int i = 0; i < 3; ++i) {
    std::string metrics = Exchange(port, "GET /metrics HTTP/1.0\r\n\r\n", std::chrono::seconds(3));
    EXPECT_EQ(Body(metrics), "up 1\n") << "a scrape waited behind stuck pages: " << metrics;
  }
  EXPECT_EQ(pages.calls(), 1);
  pages.Open();
  for (auto& t : clients) t.join();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(Body(answers[i]), i % 2 ? "page\n" : "{}\n");
  EXPECT_EQ(pages.max_inside(), 1);
}

// Page requests whose client closed while they waited for a worker are dropped: their handler never
// runs (nothing is collected or rendered for them), and the connection is closed.
TEST(HttpServerClientsThatLeftTest, PageRequestsWhoseClientLeftAreNeverRun) {
  CountingGate pages;
  std::map<std::string, HttpRoute> routes;
  routes["/api/v1/checks"] = {[&] { return pages.Pass("{}\n"); }, RouteKind::kPage};
  auto server = HttpServer::Start(Local(), routes);
  ASSERT_TRUE(server.ok());
  const int port = (*server)->port();

  std::string first;
  std::thread held([&] { first = Get(port, "GET", "/api/v1/checks"); });  // takes the page worker
  ASSERT_TRUE(pages.WaitForCalls(1));
  constexpr int kLeft = 20;
  for (int i = 0; i < kLeft; ++i) SendAndLeave(port, "/api/v1/checks");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // all read and queued
  pages.Open();
  held.join();
  EXPECT_EQ(Body(first), "{}\n");
  // Queued after the others: when it is answered, every request before it was taken.
  EXPECT_EQ(Body(Get(port, "GET", "/api/v1/checks")), "{}\n");
  EXPECT_EQ(pages.calls(), 2) << "requests whose client had left were run";
  EXPECT_EQ((*server)->requests_dropped_client_left(), static_cast<std::uint64_t>(kLeft));
}

// A handler that works in stages asks between them; when the client has left by then, it stops and
// nothing is sent.
TEST(HttpServerClientsThatLeftTest, AHandlerSeesItsClientLeaveBetweenStages) {
  CountingGate stage;
  std::atomic<int> left_seen{0}, rendered{0};
  std::map<std::string, HttpRoute> routes;
  routes["/"] = {[&](const HttpRequest& request) {
    stage.Pass("");  // "collecting"
    if (request.ClientLeft()) {
      ++left_seen;
      return HttpResponse::ClientLeft();
    }
    ++rendered;
    return HttpResponse{200, "text/html", "<p>page</p>\n"};
  }, RouteKind::kPage};
  auto server = HttpServer::Start(Local(), routes);
  ASSERT_TRUE(server.ok());
  const int port = (*server)->port();
  int fd = Connect(port);
  ASSERT_GE(fd, 0);
  SendAll(fd, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(stage.WaitForCalls(1));
  close(fd);  // the client leaves while the handler is "collecting"
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  stage.Open();
  for (int i = 0; i < 100 && left_seen == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(left_seen, 1);
  EXPECT_EQ(rendered, 0);
  EXPECT_EQ(Body(Get(port, "GET", "/")), "<p>page</p>\n");  // a client that stays is answered
  EXPECT_EQ(rendered, 1);
}

// A scrape is answered after its client's FIN (an HTTP/1.0 half-close:
// CompleteRequestThenFinIsStillAnswered), but not after a reset: no answer could be delivered.
TEST(HttpServerClientsThatLeftTest, ScrapesWhoseClientResetAreNeverRun) {
  CountingGate scrapes;
  std::map<std::string, HttpRoute> routes;
  routes["/metrics"] = {[&] { return scrapes.Pass("up 1\n"); }};
  HttpServerOptions o = Local();
  o.workers = 2;
  auto server = HttpServer::Start(o, routes);
  ASSERT_TRUE(server.ok());
  const int port = (*server)->port();

  std::vector<std::thread> held;
  std::vector<std::string> answers(2);
  for (int i = 0; i < 2; ++i) held.emplace_back([&, i] { answers[i] = Get(port, "GET", "/metrics"); });
  ASSERT_TRUE(scrapes.WaitForCalls(2));  // both workers taken
  int fd = Connect(port);
  ASSERT_GE(fd, 0);
  SendAll(fd, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // read and queued (a reset before
  // that would only close the connection: the request would never be read)
  linger reset{1, 0};
  ASSERT_EQ(setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset), 0);
  close(fd);  // RST
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  scrapes.Open();
  for (auto& t : held) t.join();
  for (const auto& a : answers) EXPECT_EQ(Body(a), "up 1\n");
  EXPECT_EQ(Body(Get(port, "GET", "/metrics")), "up 1\n");
  EXPECT_EQ(scrapes.calls(), 3) << "a scrape whose client reset was run";
  EXPECT_EQ((*server)->requests_dropped_client_left(), 1u);
}

}  // namespace
}  // namespace rdmahd
