#include "daemon/web_config.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "daemon/basic_auth.h"

namespace rdmahd {
namespace {

constexpr const char* kHash = "$2y$10$6h4mJ0Mk6cDJr3Gj6QhQWeGzRZnJkFqFf1n4Gx0aQ0k9bQ7k2u3aS";  // shape only

class HttpServerWebConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/rdmahd-webcfg-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    Write("server.crt", "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n");
    Write("server.key", "-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----\n");
    Write("ca.crt", "-----BEGIN CERTIFICATE-----\nca\n-----END CERTIFICATE-----\n");
  }
  void TearDown() override { (void)!std::system(("rm -rf '" + dir_ + "'").c_str()); }
  void Write(const std::string& name, const std::string& text) { std::ofstream(dir_ + "/" + name) << text; }
  Result<WebConfig> Parse(const std::string& yaml) { return ParseWebConfig(yaml, "web.yml", dir_); }

  std::string dir_;
};

TEST_F(HttpServerWebConfigTest, EmptyMeansPlainHttpWithoutAuth) {
  for (const char* text : {"", "# nothing\n", "tls_server_config:\n", "tls_server_config: {}\nbasic_auth_users: {}\n"}) {
    auto c = Parse(text);
    ASSERT_TRUE(c.ok()) << text << ": " << c.error().message;
    EXPECT_FALSE(c->tls) << text;
    EXPECT_TRUE(c->basic_auth_users.empty());
  }
}

TEST_F(HttpServerWebConfigTest, NodeExporterKeysWithRelativePaths) {
  auto c = Parse(std::string("tls_server_config:\n  cert_file: server.crt\n  key_file: ") + dir_ +
                 "/server.key\n  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n"
                 "  min_version: TLS13\nbasic_auth_users:\n  prom: " + kHash + "\n");
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_TRUE(c->tls);
  EXPECT_EQ(c->tls->cert_file, dir_ + "/server.crt");
  EXPECT_EQ(c->tls->key_file, dir_ + "/server.key");
  EXPECT_NE(c->tls->cert_pem.find("BEGIN CERTIFICATE"), std::string::npos);
  EXPECT_NE(c->tls->client_ca_pem.find("ca"), std::string::npos);
  EXPECT_EQ(c->tls->client_auth, ClientAuth::kRequireAndVerifyClientCert);
  EXPECT_EQ(c->tls->min_version, "TLS13");
  EXPECT_EQ(c->basic_auth_users.at("prom"), kHash);
}

TEST_F(HttpServerWebConfigTest, ErrorsNameFileAndLine) {
  struct Case {
    std::string yaml, want;
  } cases[] = {
      {"tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  cert_fiel: x\n",
       "web.yml:4:3: tls_server_config: unknown key \"cert_fiel\""},
      {"tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  cipher_suites: [x]\n",
       "web.yml:4:3: tls_server_config: \"cipher_suites\" is not supported"},
      {"tls_server_config:\n  cert_file: nope.crt\n  key_file: server.key\n", "web.yml:2:3: cert_file: " },
      {"tls_server_config:\n  cert_file: server.crt\n", "web.yml:1:1: tls_server_config: missing key_file"},
      {"tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_auth_type: Sometimes\n",
       "web.yml:4:21: client_auth_type: \"Sometimes\" is not one of"},
      {"tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_ca_file: ca.crt\n",
       "client_ca_file is set but client_auth_type is NoClientCert"},
      {"tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
       "  client_auth_type: RequireAndVerifyClientCert\n",
       "needs client_ca_file"},
      {"tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  min_version: TLS9\n",
       "web.yml:4:16: min_version: \"TLS9\" is not one of"},
      {"basic_auth_users:\n  prom: hunter2\n", "web.yml:2:9: basic_auth_users: prom: not a bcrypt hash"},
      {"basic_auth_users: [a]\n", "web.yml:1:19: basic_auth_users: want a mapping"},
      {"http_server_config:\n  http2: false\n", "web.yml:1:1: http_server_config is not supported"},
      {"tls_server_config: [\n", "web.yml:2:1: invalid YAML"},
      {"- a\n", "web.yml:1:1: the web config must be a mapping"},
  };
  for (const auto& c : cases) {
    auto r = Parse(c.yaml);
    ASSERT_FALSE(r.ok()) << c.yaml;
    EXPECT_NE(r.error().message.find(c.want), std::string::npos) << c.yaml << "\ngot: " << r.error().message;
  }
}

// A bcrypt cost past kMaxBcryptCost would make each check of a password not verified yet cost
// seconds to minutes of CPU: refused at start, naming the user, file and line, and saying why.
TEST_F(HttpServerWebConfigTest, BcryptCostAboveTheBoundIsRefused) {
  const std::string tail(53, '.');
  auto at_bound = Parse("basic_auth_users:\n  prom: $2y$" + std::to_string(kMaxBcryptCost) + "$" + tail + "\n");
  ASSERT_TRUE(at_bound.ok()) << at_bound.error().message;
  EXPECT_EQ(at_bound->basic_auth_users.size(), 1u);
  const std::string above = std::to_string(kMaxBcryptCost + 1);
  auto r = Parse("basic_auth_users:\n  alice: " + std::string(kHash) + "\n  prom: $2y$" + above + "$" + tail + "\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("web.yml:3:9: basic_auth_users: prom: bcrypt cost " + above + " is above " +
                                   std::to_string(kMaxBcryptCost)),
            std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("htpasswd -nBC 10 prom"), std::string::npos) << r.error().message;
  auto nonsense = Parse("basic_auth_users:\n  prom: $2y$99$" + tail + "\n");
  ASSERT_FALSE(nonsense.ok());
  EXPECT_NE(nonsense.error().message.find("web.yml:2:9: basic_auth_users: prom: the bcrypt cost"), std::string::npos)
      << nonsense.error().message;
}

// --web.config.file pointed at a file that is not a web config (a private key,
// a shadow file) must not print any of it.
TEST_F(HttpServerWebConfigTest, ErrorsShowNothingOfAFileThatIsNotAWebConfig) {
  const std::string pem_secret = "MIIEowIBAAKCAQEAu7Qz9sEcReTpAyLoAd";
  auto pem = Parse("-----BEGIN OPENSSH PRIVATE KEY-----\n" + pem_secret + "\n-----END OPENSSH PRIVATE KEY-----\n");
  ASSERT_FALSE(pem.ok());
  EXPECT_EQ(pem.error().message.rfind("web.yml:1:1: not a YAML mapping: the file is one scalar of ", 0), 0u)
      << pem.error().message;
  EXPECT_EQ(pem.error().message.find(pem_secret), std::string::npos) << pem.error().message;
  EXPECT_EQ(pem.error().message.find("OPENSSH"), std::string::npos) << pem.error().message;

  const std::string hash = "Hq2v8ZgMmS3cr3tH4shV4lue";
  auto shadow = Parse("root:$y$j9T$salt$" + hash + ":19000:0:99999:7:::\n");
  ASSERT_FALSE(shadow.ok());
  EXPECT_EQ(shadow.error().message.rfind("web.yml:1:1: unknown key (a key of ", 0), 0u) << shadow.error().message;
  for (const std::string& secret : {hash, std::string("root"), std::string("$y$")}) {
    EXPECT_EQ(shadow.error().message.find(secret), std::string::npos) << shadow.error().message;
  }
  // Values and odd user names: short escaped excerpts, or nothing.
  auto version = Parse("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  min_version: " +
                       std::string(5000, 'z') + "\n");
  ASSERT_FALSE(version.ok());
  EXPECT_EQ(version.error().message, "web.yml:4:16: min_version: \"" + std::string(40, 'z') +
                                         "...\" (5000 bytes) is not one of TLS10, TLS11, TLS12, TLS13");
  auto user = Parse("basic_auth_users:\n  \"root:" + hash + "\": hunter2\n");
  ASSERT_FALSE(user.ok());
  EXPECT_EQ(user.error().message.find(hash), std::string::npos) << user.error().message;
  // Odd bytes are named where they are.
  auto tab = Parse("tls_server_config:\n\tcert_file: server.crt\n");
  ASSERT_FALSE(tab.ok());
  EXPECT_EQ(tab.error().message, "web.yml:2:1: a tab in the indentation: YAML indents with spaces only");
}

TEST_F(HttpServerWebConfigTest, FilesThatAreNotSmallRegularFilesAreRefused) {
  EXPECT_FALSE(LoadWebConfigFile(dir_ + "/missing.yml").ok());
  auto folder = LoadWebConfigFile(dir_);
  ASSERT_FALSE(folder.ok());
  EXPECT_NE(folder.error().message.find("not a regular file"), std::string::npos) << folder.error().message;
  std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto f = LoadWebConfigFile(fifo);  // must not hang waiting for a writer
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message.find("not a regular file"), std::string::npos);
  Write("big.yml", std::string(2 << 20, '#'));
  auto big = LoadWebConfigFile(dir_ + "/big.yml");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message.find("larger than 1 MiB"), std::string::npos);

  Write("web.yml", "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n");
  auto ok = LoadWebConfigFile(dir_ + "/web.yml");  // relative to the file's folder, not the cwd
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->tls->cert_file, dir_ + "/server.crt");
}

}  // namespace
}  // namespace rdmahd
