// Against a real DNS server: dnsmasq on 127.0.0.1 (a port of the test's own), answering from a
// hosts file for names under .test (RFC 2606), with documentation-range addresses.
#include "probes/dns_resolver.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/test_paths.h"

extern char** environ;

namespace rdmahd {
namespace {

// A UDP socket bound to 127.0.0.1 on a free port (kept open by whoever needs the port held).
struct UdpPort {
  int fd = -1;
  std::uint16_t port = 0;
  UdpPort() {
    fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port = ntohs(addr.sin_port);
    }
  }
  ~UdpPort() {
    if (fd >= 0) close(fd);
  }
};

class Dnsmasq {
 public:
  explicit Dnsmasq(const std::string& hosts_file) {
    std::uint16_t port;
    {
      UdpPort free_port;  // released just before dnsmasq binds it
      port = free_port.port;
    }
    server_ = "127.0.0.1:" + std::to_string(port);
    std::vector<std::string> args = {"dnsmasq", "--keep-in-foreground", "--port=" + std::to_string(port),
                                     "--listen-address=127.0.0.1", "--bind-interfaces", "--no-resolv",
                                     "--no-hosts", "--addn-hosts=" + hosts_file, "--local=/test/",
                                     "--cname=alias.test,svc.test", "--conf-file=/dev/null", "--pid-file=",
                                     "--user=root", "--log-facility=/dev/null"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawnp(&pid_, "dnsmasq", nullptr, nullptr, argv.data(), environ) != 0) pid_ = -1;
  }
  ~Dnsmasq() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
  }
  bool started() const { return pid_ > 0; }
  // True once dnsmasq has exited, e.g. because another process took the port between its release
  // above and dnsmasq's bind (tests run in parallel, and the kernel hands out freed ports again).
  bool exited() {
    if (pid_ <= 0) return true;
    if (waitpid(pid_, nullptr, WNOHANG) != pid_) return false;
    pid_ = -1;
    return true;
  }
  const std::string& server() const { return server_; }

 private:
  pid_t pid_ = -1;
  std::string server_;
};

class DnsResolverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_.Write("hosts",
               "192.0.2.11 svc.test\n192.0.2.12 svc.test\n192.0.2.10 svc.test\n2001:db8::1 svc.test\n"
               "192.0.2.20 single.test\n2001:db8::9 v6only.test\n");
    options_.timeout = std::chrono::seconds(1);
    options_.attempts = 1;
    bool answering = false;
    for (int attempt = 0; attempt < 5 && !answering; ++attempt) {
      dns_ = std::make_unique<Dnsmasq>(dir_.path() + "/hosts");
      // dnsmasq is installed by scripts/install-deps.sh (test tier): missing, this is a failure.
      ASSERT_TRUE(dns_->started()) << "cannot start dnsmasq (package dnsmasq-base)";
      options_.server = dns_->server();
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      while (!(answering = ResolveAddresses("single.test", options_).ok()) && !dns_->exited() &&
             std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
    ASSERT_TRUE(answering) << "dnsmasq on " << options_.server << " does not answer";
  }
  testing::TempDir dir_;
  std::unique_ptr<Dnsmasq> dns_;
  DnsOptions options_;
};

TEST_F(DnsResolverTest, HeadlessServiceNameGivesEveryAddress) {
  auto r = ResolveAddresses("svc.test", options_);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, (std::vector<std::string>{"192.0.2.10", "192.0.2.11", "192.0.2.12", "2001:db8::1"}));
  auto alias = ResolveAddresses("alias.test", options_);  // through a CNAME
  ASSERT_TRUE(alias.ok()) << alias.error().message;
  EXPECT_EQ(*alias, *r);
  auto v6 = ResolveAddresses("v6only.test", options_);
  ASSERT_TRUE(v6.ok()) << v6.error().message;
  EXPECT_EQ(*v6, std::vector<std::string>{"2001:db8::9"});
}

TEST_F(DnsResolverTest, UnknownNameIsAnErrorNamingNameAndServer) {
  auto r = ResolveAddresses("missing.test", options_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("missing.test does not exist (NXDOMAIN from " + options_.server + ")"),
            std::string::npos)
      << r.error().message;
}

TEST(DnsResolverTimeoutTest, SilentServerEndsAtTheTimeout) {
  UdpPort silent;  // bound, never answers
  ASSERT_NE(silent.port, 0);
  DnsOptions options;
  options.server = "127.0.0.1:" + std::to_string(silent.port);
  options.timeout = std::chrono::seconds(1);
  options.attempts = 1;
  const auto start = std::chrono::steady_clock::now();
  auto r = ResolveAddresses("svc.test", options);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("timeout or SERVFAIL"), std::string::npos) << r.error().message;
  EXPECT_LT(took, std::chrono::seconds(4));
}

TEST(DnsResolverOptionsTest, BadInputIsRefusedBeforeAnyQuery) {
  EXPECT_FALSE(ResolveAddresses("", {}).ok());
  DnsOptions bad;
  bad.server = "127.0.0.1:99999";
  EXPECT_NE(ResolveAddresses("a.test", bad).error().message.find("bad port"), std::string::npos);
  bad.server = "not-an-ip";
  EXPECT_NE(ResolveAddresses("a.test", bad).error().message.find("IPv4 address"), std::string::npos);
}

}  // namespace
}  // namespace rdmahd
