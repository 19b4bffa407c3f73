// Against real DNS servers on 127.0.0.1 (ports of the test's own), for names under .test
// (RFC 2606) with documentation-range or private addresses: dnsmasq answering from a hosts file,
// and a scripted server of the test's own for answers dnsmasq will not give (thousands of records,
// CNAME loops and chains, silence).
#include "probes/dns_resolver.h"

#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
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

// A DNS server on 127.0.0.1, UDP and TCP on one port, answering what `answer` scripts for each
// question. Over UDP an answer of more than 512 bytes goes out truncated (TC set, no records), as a
// server without EDNS sends it, so the resolver asks again over TCP.
class ScriptedDnsServer {
 public:
  struct Record {
    std::string owner;
    std::uint16_t type;  // ns_t_a, ns_t_aaaa, ns_t_cname
    std::string data;    // an address (A, AAAA) or a name (CNAME)
  };
  struct Response {
    std::vector<Record> records;
    bool silent = false;  // no answer at all
  };
  using Answerer = std::function<Response(const std::string& name, std::uint16_t type)>;

  explicit ScriptedDnsServer(Answerer answer) : answer_(std::move(answer)) {
    for (int attempt = 0; attempt < 20 && port_ == 0; ++attempt) Bind();
    if (port_ != 0 && pipe2(wake_, O_CLOEXEC) == 0) thread_ = std::thread([this] { Serve(); });
  }
  ~ScriptedDnsServer() {
    if (thread_.joinable()) {
      const char c = 0;
      const ssize_t woken = write(wake_[1], &c, 1);  // a pipe with room: never short
      static_cast<void>(woken);
      thread_.join();
    }
    for (int fd : {udp_, tcp_, wake_[0], wake_[1]}) {
      if (fd >= 0) close(fd);
    }
  }
  bool started() const { return thread_.joinable(); }
  std::string server() const { return "127.0.0.1:" + std::to_string(port_); }
  int udp_queries() const { return udp_queries_.load(); }
  int tcp_queries() const { return tcp_queries_.load(); }

  static std::string Encode(const std::string& name) {
    std::string out;
    std::size_t start = 0;
    while (start < name.size()) {
      std::size_t dot = name.find('.', start);
      if (dot == std::string::npos) dot = name.size();
      out += static_cast<char>(dot - start);
      out += name.substr(start, dot - start);
      start = dot + 1;
    }
    return out + '\0';
  }

  static void Put16(std::string& out, std::size_t v) {
    out += static_cast<char>((v >> 8) & 0xFF);
    out += static_cast<char>(v & 0xFF);
  }

  // A query for `name` and `type`, as a resolver sends it.
  static std::string Query(const std::string& name, std::uint16_t type) {
    std::string out("\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00", 12);
    out += Encode(name);
    Put16(out, type);
    Put16(out, ns_c_in);
    return out;
  }

  // The response to `query` (empty: none), or a truncated one when it exceeds `limit`.
  static std::string Answer(const std::string& query, std::size_t limit, const Answerer& answer) {
    if (query.size() < 12) return "";
    std::string name;
    std::size_t at = 12;
    while (at < query.size() && query[at] != 0) {
      const std::size_t n = static_cast<unsigned char>(query[at]);
      if (at + 1 + n > query.size()) return "";
      if (!name.empty()) name += '.';
      name += query.substr(at + 1, n);
      at += 1 + n;
    }
    if (at + 5 > query.size()) return "";
    const std::string question = query.substr(12, at + 5 - 12);
    const std::uint16_t type = static_cast<std::uint16_t>((static_cast<unsigned char>(query[at + 1]) << 8) |
                                                          static_cast<unsigned char>(query[at + 2]));
    const Response response = answer(name, type);
    if (response.silent) return "";
    std::string records;
    for (const Record& r : response.records) {
      if (r.owner == name) {
        records += "\xC0\x0C";  // a pointer to the question's name
      } else {
        records += Encode(r.owner);
      }
      std::string data;
      if (r.type == ns_t_a || r.type == ns_t_aaaa) {
        unsigned char bytes[16];
        const int family = r.type == ns_t_a ? AF_INET : AF_INET6;
        if (inet_pton(family, r.data.c_str(), bytes) != 1) return "";
        data.assign(reinterpret_cast<char*>(bytes), r.type == ns_t_a ? 4 : 16);
      } else {
        data = Encode(r.data);
      }
      Put16(records, r.type);
      Put16(records, ns_c_in);
      records += std::string("\0\0\0\x3C", 4);  // TTL 60
      Put16(records, data.size());
      records += data;
    }
    std::string out = query.substr(0, 2);  // ID
    const bool truncated = 12 + question.size() + records.size() > limit;
    out += static_cast<char>(0x84 | (truncated ? 0x02 : 0) | (query[2] & 0x01));  // QR, AA, TC, RD
    out += static_cast<char>(0x80);                                               // RA, NOERROR
    Put16(out, 1);
    Put16(out, truncated ? 0 : response.records.size());
    Put16(out, 0);
    Put16(out, 0);
    out += question;
    if (!truncated) out += records;
    return out;
  }

 private:
  void Bind() {
    udp_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    tcp_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (bind(udp_, reinterpret_cast<sockaddr*>(&addr), len) == 0 &&
        getsockname(udp_, reinterpret_cast<sockaddr*>(&addr), &len) == 0 &&
        bind(tcp_, reinterpret_cast<sockaddr*>(&addr), len) == 0 && listen(tcp_, 16) == 0) {
      port_ = ntohs(addr.sin_port);
      return;
    }
    close(udp_);
    close(tcp_);
    udp_ = tcp_ = -1;
  }

  void Serve() {
    std::vector<pollfd> fds = {{wake_[0], POLLIN, 0}, {udp_, POLLIN, 0}, {tcp_, POLLIN, 0}};
    std::map<int, std::string> pending;  // TCP client -> bytes read so far
    while (true) {
      if (poll(fds.data(), fds.size(), -1) < 0) continue;
      if (fds[0].revents != 0) break;
      if (fds[1].revents & POLLIN) {
        char buf[1500];
        sockaddr_in from{};
        socklen_t len = sizeof from;
        const ssize_t n = recvfrom(udp_, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &len);
        if (n > 0) {
          ++udp_queries_;
          const std::string reply = Answer(std::string(buf, static_cast<std::size_t>(n)), 512, answer_);
          if (!reply.empty()) sendto(udp_, reply.data(), reply.size(), 0, reinterpret_cast<sockaddr*>(&from), len);
        }
      }
      if (fds[2].revents & POLLIN) {
        const int client = accept4(tcp_, nullptr, nullptr, SOCK_CLOEXEC);
        if (client >= 0) {
          fds.push_back({client, POLLIN, 0});
          pending[client];
        }
      }
      for (std::size_t i = 3; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        const int client = fds[i].fd;
        char buf[4096];
        const ssize_t n = read(client, buf, sizeof buf);
        std::string& in = pending[client];
        if (n > 0) in.append(buf, static_cast<std::size_t>(n));
        while (in.size() >= 2) {
          const std::size_t len = (static_cast<unsigned char>(in[0]) << 8) | static_cast<unsigned char>(in[1]);
          if (in.size() < 2 + len) break;
          ++tcp_queries_;
          const std::string reply = Answer(in.substr(2, len), kMaxDnsMessageBytes, answer_);
          in.erase(0, 2 + len);
          if (reply.empty()) continue;
          std::string framed;
          Put16(framed, reply.size());
          framed += reply;
          for (std::size_t sent = 0; sent < framed.size();) {
            const ssize_t w = write(client, framed.data() + sent, framed.size() - sent);
            if (w <= 0) break;
            sent += static_cast<std::size_t>(w);
          }
        }
        if (n <= 0) {
          close(client);
          pending.erase(client);
          fds.erase(fds.begin() + static_cast<std::ptrdiff_t>(i));
          --i;
        }
      }
    }
    for (std::size_t i = 3; i < fds.size(); ++i) close(fds[i].fd);
  }

  Answerer answer_;
  int udp_ = -1, tcp_ = -1;
  int wake_[2] = {-1, -1};
  std::uint16_t port_ = 0;
  std::atomic<int> udp_queries_{0}, tcp_queries_{0};
  std::thread thread_;
};

DnsOptions Fast(const ScriptedDnsServer& server) {
  DnsOptions options;
  options.server = server.server();
  options.timeout = std::chrono::seconds(2);
  options.attempts = 1;
  return options;
}

// `count` distinct private addresses, in numeric order.
std::vector<std::string> Addresses(int count) {
  std::vector<std::string> out;
  for (int i = 0; i < count; ++i) {
    out.push_back("10.20." + std::to_string(i / 256) + "." + std::to_string(i % 256));
  }
  return out;
}

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


using Record = ScriptedDnsServer::Record;
using Response = ScriptedDnsServer::Response;

// A headless Service of 600 and of 4,000 pods: A answers of 9,626 and 64,026 bytes, past any
// small answer buffer (and past UDP's 512: they come over TCP). Every address is found.
TEST(DnsResolverScriptedTest, AnswersOfThousandsOfRecordsComeOverTcpWhole) {
  for (int count : {600, 4000}) {
    const std::vector<std::string> pods = Addresses(count);
    ScriptedDnsServer dns([&](const std::string& name, std::uint16_t type) {
      Response r;
      if (name == "big.test" && type == ns_t_a) {
        for (const std::string& a : pods) r.records.push_back({"big.test", ns_t_a, a});
      }
      return r;
    });
    ASSERT_TRUE(dns.started());
    auto r = ResolveAddresses("big.test", Fast(dns));
    if (!r.ok()) {
      ADD_FAILURE() << count << " records: " << r.error().message;
      continue;
    }
    std::vector<std::string> want = pods;
    std::sort(want.begin(), want.end());
    EXPECT_EQ(*r, want) << count << " records";
    EXPECT_GE(dns.tcp_queries(), 1) << "the answer did not need TCP: the test proves nothing";
  }
}

// Only the records of the name asked (or of its alias chain's end) are peers; a server's extra
// records for other names are not.
TEST(DnsResolverScriptedTest, OnlyTheRecordsOfTheEndOfTheChainCount) {
  ScriptedDnsServer dns([](const std::string& name, std::uint16_t type) {
    Response r;
    if (name == "alias.test") {
      r.records = {{"alias.test", ns_t_cname, "Mid.Test"}, {"mid.test", ns_t_cname, "end.test"}};
      if (type == ns_t_a) {
        r.records.push_back({"end.test", ns_t_a, "192.0.2.1"});
        r.records.push_back({"END.test", ns_t_a, "192.0.2.2"});      // names are case-insensitive
        r.records.push_back({"stray.test", ns_t_a, "192.0.2.66"});  // not on the chain
        r.records.push_back({"mid.test", ns_t_a, "192.0.2.67"});    // an alias has no records of its own
      }
    }
    return r;
  });
  ASSERT_TRUE(dns.started());
  auto r = ResolveAddresses("alias.test", Fast(dns));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, (std::vector<std::string>{"192.0.2.1", "192.0.2.2"}));
}

// An alias that leads nowhere is an error saying why (discovery turns it into a warning), never
// an empty list that reads as "a Service with no pods".
TEST(DnsResolverScriptedTest, CnameLoopsLongChainsAndDanglingAliasesAreErrorsWithTheReason) {
  ScriptedDnsServer dns([](const std::string& name, std::uint16_t type) {
    Response r;
    if (name == "loop-a.test" || name == "loop-b.test") {
      r.records = {{"loop-a.test", ns_t_cname, "loop-b.test"}, {"loop-b.test", ns_t_cname, "loop-a.test"}};
      if (name == "loop-b.test") std::swap(r.records[0], r.records[1]);
    } else if (name == "self.test") {
      r.records = {{"self.test", ns_t_cname, "self.test"}};
    } else if (name.starts_with("hop")) {
      // hopN.test: a chain of N CNAMEs, c1.test .. cN.test, then an address.
      const int hops = std::stoi(name.substr(3));
      std::string at = name;
      for (int i = 1; i <= hops; ++i) {
        const std::string next = "c" + std::to_string(i) + ".test";
        r.records.push_back({at, ns_t_cname, next});
        at = next;
      }
      if (type == ns_t_a) r.records.push_back({at, ns_t_a, "192.0.2.5"});
    } else if (name == "dangling.test") {
      r.records = {{"dangling.test", ns_t_cname, "nowhere.test"}};
    }
    return r;
  });
  ASSERT_TRUE(dns.started());
  const DnsOptions options = Fast(dns);
  auto loop = ResolveAddresses("loop-a.test", options);
  ASSERT_FALSE(loop.ok());
  EXPECT_NE(loop.error().message.find("loop-a.test is a CNAME loop: loop-a.test -> loop-b.test -> loop-a.test"),
            std::string::npos)
      << loop.error().message;
  EXPECT_NE(loop.error().message.find(options.server), std::string::npos) << loop.error().message;
  auto self = ResolveAddresses("self.test", options);
  ASSERT_FALSE(self.ok());
  EXPECT_NE(self.error().message.find("CNAME loop: self.test -> self.test"), std::string::npos) << self.error().message;

  auto longest = ResolveAddresses("hop" + std::to_string(kMaxCnameChain) + ".test", options);
  ASSERT_TRUE(longest.ok()) << longest.error().message;
  EXPECT_EQ(*longest, std::vector<std::string>{"192.0.2.5"});
  auto too_long = ResolveAddresses("hop" + std::to_string(kMaxCnameChain + 1) + ".test", options);
  ASSERT_FALSE(too_long.ok());
  EXPECT_NE(too_long.error().message.find("is a chain of more than 16 CNAMEs: hop17.test -> c1.test -> ... -> c17.test"),
            std::string::npos)
      << too_long.error().message;

  auto dangling = ResolveAddresses("dangling.test", options);
  ASSERT_FALSE(dangling.ok());
  EXPECT_NE(dangling.error().message.find(
                "dangling.test is an alias (dangling.test -> nowhere.test) whose last name has no A or AAAA record"),
            std::string::npos)
      << dangling.error().message;
}

TEST(DnsAnswerParseTest, EveryTruncationOfAnAnswerIsRefusedOrASubsetNeverARead) {
  const auto answer = [](const std::string&, std::uint16_t) {
    Response r;
    r.records = {{"svc.test", ns_t_cname, "end.test"}, {"end.test", ns_t_a, "192.0.2.1"}, {"end.test", ns_t_a, "192.0.2.2"}};
    return r;
  };
  const std::string whole = ScriptedDnsServer::Answer(ScriptedDnsServer::Query("svc.test", ns_t_a), 65535, answer);
  ASSERT_FALSE(whole.empty());
  for (std::size_t n = 0; n <= whole.size(); ++n) {
    // A copy of exactly n bytes on the heap, so that a read past it is an ASan report.
    std::vector<unsigned char> bytes(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(n));
    auto r = ParseDnsAnswer(bytes.data(), bytes.size(), "svc.test", DnsAddressType::kA);
    if (n < whole.size()) {
      EXPECT_FALSE(r.ok()) << n << " of " << whole.size() << " bytes";
    } else {
      ASSERT_TRUE(r.ok()) << r.error().message;
      EXPECT_EQ(r->addresses, (std::vector<std::string>{"192.0.2.1", "192.0.2.2"}));
      EXPECT_EQ(r->chain, (std::vector<std::string>{"svc.test", "end.test"}));
    }
  }
  auto other = ParseDnsAnswer(reinterpret_cast<const unsigned char*>(whole.data()), whole.size(), "other.test",
                              DnsAddressType::kA);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().message.find("answers another question (svc.test)"), std::string::npos)
      << other.error().message;
  auto aaaa = ParseDnsAnswer(reinterpret_cast<const unsigned char*>(whole.data()), whole.size(), "SVC.test.",
                             DnsAddressType::kAaaa);
  EXPECT_FALSE(aaaa.ok());  // an A answer to an AAAA question
  EXPECT_FALSE(ParseDnsAnswer(nullptr, 0, "svc.test", DnsAddressType::kA).ok());
}

// svc.test A with one CNAME record whose data is `rdata`.
std::string WithCnameData(const std::string& rdata) {
  std::string m = ScriptedDnsServer::Query("svc.test", ns_t_a);
  m[2] = static_cast<char>(0x81);  // QR, RD
  m[7] = 1;                        // one answer
  m += std::string("\xC0\x0C\x00\x05\x00\x01\x00\x00\x00\x3C", 10);
  ScriptedDnsServer::Put16(m, rdata.size());
  return m + rdata;
}

Result<DnsAnswer> Parse(const std::string& m) {
  std::vector<unsigned char> bytes(m.begin(), m.end());  // exactly m.size() bytes on the heap
  return ParseDnsAnswer(bytes.data(), bytes.size(), "svc.test", DnsAddressType::kA);
}

TEST(DnsAnswerParseTest, NamesAreEscapedAndPointerLoopsRefused) {
  // A target with a newline, a space and a dot inside one label: printed escaped, as dig does.
  auto odd = Parse(WithCnameData(std::string("\x06x\n y.z\x04test\x00", 13)));
  ASSERT_TRUE(odd.ok()) << odd.error().message;
  EXPECT_EQ(odd->chain, (std::vector<std::string>{"svc.test", "x\\010\\032y\\.z.test"}));
  EXPECT_TRUE(odd->addresses.empty());

  // The CNAME's data is a pointer to itself (offset 38: 12 header, 14 question, 12 record head).
  const std::string to_itself = WithCnameData(std::string("\xC0\x26", 2));
  ASSERT_EQ(to_itself.size(), 40u);
  EXPECT_FALSE(Parse(to_itself).ok());
  // A label, then a pointer back to that label: a loop only the name's length bound ends.
  EXPECT_FALSE(Parse(WithCnameData(std::string("\x01" "a\xC0\x26", 4))).ok());
  // A pointer forward, a pointer past the end, a reserved label type, a target longer than its data.
  EXPECT_FALSE(Parse(WithCnameData(std::string("\xC0\x30", 2))).ok());
  EXPECT_FALSE(Parse(WithCnameData(std::string("\xFF\xFF", 2))).ok());
  EXPECT_FALSE(Parse(WithCnameData(std::string("\x41\x00", 2))).ok());
  std::string longer = WithCnameData(std::string("\x01" "a\x00", 3));
  longer[longer.size() - 4] = 2;  // rdlength 2: the name runs one byte past the record's data
  EXPECT_FALSE(Parse(longer).ok());
  // A name of more than 255 bytes.
  std::string huge;
  for (int i = 0; i < 5; ++i) huge += '\x3F' + std::string(63, 'a');
  EXPECT_FALSE(Parse(WithCnameData(huge + '\0')).ok());
  // TC: the answer was cut to fit.
  std::string cut = WithCnameData(std::string("\x01" "a\x00", 3));
  cut[2] = static_cast<char>(cut[2] | 0x02);
  auto truncated = Parse(cut);
  ASSERT_FALSE(truncated.ok());
  EXPECT_NE(truncated.error().message.find("truncated"), std::string::npos) << truncated.error().message;
}

}  // namespace
}  // namespace rdmahd
