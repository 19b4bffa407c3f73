#include "daemon/web_config.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <vector>

#include "common/excerpt.h"
#include "common/node_fs.h"
#include "config/yaml_document.h"
#include "daemon/basic_auth.h"

namespace rdmahd {
namespace {

// A web config or PEM file is a few KiB.
constexpr std::size_t kMaxFileBytes = std::size_t{1} << 20;

std::string At(const std::string& source, const YAML::Mark& mark) {
  if (mark.is_null() || mark.line < 0) return source;
  return source + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

std::string Resolve(const std::string& base_dir, const std::string& path) {
  if (path.empty() || path.front() == '/' || base_dir.empty()) return path;
  return base_dir + "/" + path;
}

// A user name in a message: as written when it is a plain name, otherwise described, not shown.
std::string ShownUser(const std::string& user) { return LooksLikeKeyName(user) ? user : DescribeKey(user); }

bool IsBcrypt(const std::string& h) {
  return h.size() == 60 && h[0] == '$' && h[1] == '2' && (h[2] == 'a' || h[2] == 'b' || h[2] == 'y') &&
         h[3] == '$';
}

class Parser {
 public:
  explicit Parser(std::string source, std::string base_dir)
      : source_(std::move(source)), base_dir_(std::move(base_dir)) {}

  Status Parse(const YAML::Node& root, WebConfig& out) {
    if (!root.IsMap()) {
      return Fail(root.Mark(), root.IsScalar() ? "not a YAML mapping: the file is one scalar of " +
                                                     std::to_string(root.Scalar().size()) +
                                                     " bytes (not shown); the web config must be a mapping of keys"
                                               : "the web config must be a mapping of keys");
    }
    for (const auto& kv : root) {
      if (!kv.first.IsScalar()) return Fail(kv.first.Mark(), "keys must be plain names");
      const std::string key = kv.first.Scalar();
      if (key == "tls_server_config") {
        if (Status st = ParseTls(kv.first, kv.second, out); !st.ok()) return st;
      } else if (key == "basic_auth_users") {
        if (Status st = ParseUsers(kv.second, out); !st.ok()) return st;
      } else if (key == "http_server_config") {
        return Fail(kv.first.Mark(), "http_server_config is not supported by rdma-healthd");
      } else {
        return Fail(kv.first.Mark(), "unknown key " + DescribeKey(key, 21) +
                                         " (known: tls_server_config, basic_auth_users)");
      }
    }
    return Status::Ok();
  }

 private:
  Status Fail(const YAML::Mark& mark, const std::string& message) const {
    return Error{At(source_, mark) + ": " + message};
  }

  Result<std::string> Scalar(const YAML::Node& key, const YAML::Node& value) const {
    if (!value.IsScalar()) return Fail(value.IsNull() ? key.Mark() : value.Mark(), key.Scalar() + ": want a string").error();
    return value.Scalar();
  }

  Status ReadPem(const YAML::Node& key, const std::string& path, std::string& pem) const {
    auto text = ReadRegularFile(path, kMaxFileBytes);
    if (!text.ok()) return Fail(key.Mark(), key.Scalar() + ": " + text.error().message);
    pem = std::move(text).value();
    return Status::Ok();
  }

  Status ParseTls(const YAML::Node& section_key, const YAML::Node& node, WebConfig& out) {
    if (node.IsNull()) return Status::Ok();
    if (!node.IsMap()) return Fail(node.Mark(), "tls_server_config: want a mapping");
    TlsServerConfig tls;
    std::string client_auth = "NoClientCert";
    YAML::Mark client_auth_mark = section_key.Mark();
    for (const auto& kv : node) {
      if (!kv.first.IsScalar()) return Fail(kv.first.Mark(), "tls_server_config: keys must be plain names");
      const std::string key = kv.first.Scalar();
      if (key != "cert_file" && key != "key_file" && key != "client_ca_file" && key != "client_auth_type" &&
          key != "min_version" && key != "max_version") {
        bool toolkit = key == "cipher_suites" || key == "curve_preferences" ||
                       key == "prefer_server_cipher_suites" || key == "client_allowed_sans" ||
                       key == "cert" || key == "key";
        return Fail(kv.first.Mark(),
                    "tls_server_config: " + (toolkit ? "\"" + key + "\" is not supported by rdma-healthd"
                                                     : "unknown key " + DescribeKey(key, 30)) +
                        " (known: cert_file, key_file, client_auth_type, client_ca_file, min_version, "
                        "max_version)");
      }
      auto value = Scalar(kv.first, kv.second);
      if (!value.ok()) return value.error();
      if (key == "cert_file") {
        tls.cert_file = Resolve(base_dir_, *value);
        if (Status st = ReadPem(kv.first, tls.cert_file, tls.cert_pem); !st.ok()) return st;
      } else if (key == "key_file") {
        tls.key_file = Resolve(base_dir_, *value);
        if (Status st = ReadPem(kv.first, tls.key_file, tls.key_pem); !st.ok()) return st;
      } else if (key == "client_ca_file") {
        tls.client_ca_file = Resolve(base_dir_, *value);
        if (Status st = ReadPem(kv.first, tls.client_ca_file, tls.client_ca_pem); !st.ok()) return st;
      } else if (key == "client_auth_type") {
        client_auth = *value;
        client_auth_mark = kv.second.Mark();
      } else {
        if (*value != "TLS10" && *value != "TLS11" && *value != "TLS12" && *value != "TLS13") {
          return Fail(kv.second.Mark(), key + ": " + QuoteExcerpt(*value) + " is not one of TLS10, TLS11, TLS12, TLS13");
        }
        (key == "min_version" ? tls.min_version : tls.max_version) = *value;
      }
    }
    if (tls.cert_file.empty() && tls.key_file.empty() && tls.client_ca_file.empty() &&
        client_auth == "NoClientCert") {
      return Status::Ok();  // an empty section: plain HTTP, as exporter-toolkit does
    }
    if (tls.cert_file.empty()) return Fail(section_key.Mark(), "tls_server_config: missing cert_file");
    if (tls.key_file.empty()) return Fail(section_key.Mark(), "tls_server_config: missing key_file");
    if (client_auth == "NoClientCert") {
      tls.client_auth = ClientAuth::kNoClientCert;
    } else if (client_auth == "RequireAnyClientCert") {
      tls.client_auth = ClientAuth::kRequireAnyClientCert;
    } else if (client_auth == "VerifyClientCertIfGiven") {
      tls.client_auth = ClientAuth::kVerifyClientCertIfGiven;
    } else if (client_auth == "RequireAndVerifyClientCert") {
      tls.client_auth = ClientAuth::kRequireAndVerifyClientCert;
    } else {
      return Fail(client_auth_mark, "client_auth_type: " + QuoteExcerpt(client_auth) +
                                        " is not one of NoClientCert, RequireAnyClientCert, "
                                        "VerifyClientCertIfGiven, RequireAndVerifyClientCert");
    }
    if (!tls.client_ca_file.empty() && tls.client_auth == ClientAuth::kNoClientCert) {
      return Fail(client_auth_mark, "client_ca_file is set but client_auth_type is NoClientCert");
    }
    if (tls.client_ca_file.empty() && (tls.client_auth == ClientAuth::kVerifyClientCertIfGiven ||
                                       tls.client_auth == ClientAuth::kRequireAndVerifyClientCert)) {
      return Fail(client_auth_mark, "client_auth_type " + client_auth + " needs client_ca_file");
    }
    if (!tls.max_version.empty() && tls.max_version < tls.min_version) {
      return Fail(section_key.Mark(), "tls_server_config: max_version " + tls.max_version +
                                          " is older than min_version " + tls.min_version);
    }
    out.tls = std::move(tls);
    return Status::Ok();
  }

  Status ParseUsers(const YAML::Node& node, WebConfig& out) {
    if (node.IsNull()) return Status::Ok();
    if (!node.IsMap()) return Fail(node.Mark(), "basic_auth_users: want a mapping of user: bcrypt hash");
    for (const auto& kv : node) {
      if (!kv.first.IsScalar()) return Fail(kv.first.Mark(), "basic_auth_users: a user name must be a string");
      const std::string user = kv.first.Scalar();
      auto hash = Scalar(kv.first, kv.second);
      if (!hash.ok()) return hash.error();
      if (user.empty() || user.find(':') != std::string::npos) {
        return Fail(kv.first.Mark(), "basic_auth_users: a user name is not empty and has no ':'");
      }
      if (!IsBcrypt(*hash)) {
        const std::string shown = ShownUser(user);
        return Fail(kv.second.Mark(), "basic_auth_users: " + shown +
                                          ": not a bcrypt hash ($2a$, $2b$ or $2y$, 60 characters; "
                                          "make one with htpasswd -nBC 10 " +
                                          (LooksLikeKeyName(user) ? user : std::string("USER")) + ")");
      }
      // A cost past the bound would make every check of a password not yet remembered (the
      // first scrape, each wrong password) cost seconds to minutes of CPU.
      if (std::optional<int> cost = BcryptCost(*hash); !cost || *cost > kMaxBcryptCost) {
        const std::string shown = ShownUser(user);
        const std::string remake =
            " (make one with htpasswd -nBC 10 " + (LooksLikeKeyName(user) ? user : std::string("USER")) + ")";
        if (!cost) {
          return Fail(kv.second.Mark(), "basic_auth_users: " + shown +
                                            ": the bcrypt cost (the number after $2y$) is not 04 to 31" + remake);
        }
        const std::string bound = std::to_string(kMaxBcryptCost);
        const std::string times = std::to_string(1 << (*cost - kMaxBcryptCost));
        return Fail(kv.second.Mark(), "basic_auth_users: " + shown + ": bcrypt cost " + std::to_string(*cost) +
                                          " is above " + bound + ", the most rdma-healthd accepts: each check of a "
                                          "password not verified before would take " + times +
                                          " times as long as at cost " + bound +
                                          " (about a second of CPU), so a first scrape could time out" + remake);
      }
      if (!out.basic_auth_users.emplace(user, *hash).second) {
        return Fail(kv.first.Mark(), "basic_auth_users: user " + ShownUser(user) + " given twice");
      }
    }
    return Status::Ok();
  }

  std::string source_;
  std::string base_dir_;
};

Result<WebConfig> ParseWebConfigUncapped(const std::string& yaml_text, const std::string& source,
                                         const std::string& base_dir) {
  if (std::optional<std::string> problem = YamlTextProblem(yaml_text, source)) return Error{*problem};
  WebConfig config;
  config.source = source;
  try {
    std::vector<YAML::Node> docs;
    try {
      docs = YAML::LoadAll(yaml_text);
    } catch (const YAML::ParserException& e) {
      return Error{At(source, e.mark) + ": invalid YAML: " + e.msg};
    }
    if (docs.size() > 1) return Error{At(source, docs[1].Mark()) + ": a second YAML document"};
    if (docs.empty() || docs[0].IsNull()) return config;
    Status st = Parser(source, base_dir).Parse(docs[0], config);
    if (!st.ok()) return st.error();
    return config;
  } catch (const YAML::Exception& e) {
    return Error{At(source, e.mark) + ": " + e.msg};
  } catch (const std::exception& e) {
    return Error{source + ": " + e.what()};
  }
}

}  // namespace

// Messages quote no more of the file than short escaped excerpts, and are capped in length.
Result<WebConfig> ParseWebConfig(const std::string& yaml_text, const std::string& source,
                                 const std::string& base_dir) {
  Result<WebConfig> parsed = ParseWebConfigUncapped(yaml_text, source, base_dir);
  if (!parsed.ok()) return Error{CapMessage(parsed.error().message), parsed.error().errno_value};
  return parsed;
}

Result<WebConfig> LoadWebConfigFile(const std::string& path) {
  auto text = ReadRegularFile(path, kMaxFileBytes);
  if (!text.ok()) return Error{"web config file: " + text.error().message, text.error().errno_value};
  auto slash = path.rfind('/');
  std::string base_dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  return ParseWebConfig(*text, path, base_dir);
}

std::string WebConfigSettingsYaml(const WebConfig& config) {
  constexpr const char* kRedacted = "<redacted>";
  YAML::Emitter out;
  out << YAML::BeginMap;
  if (config.tls) {
    const TlsServerConfig& t = *config.tls;
    const char* auth = "NoClientCert";
    switch (t.client_auth) {
      case ClientAuth::kNoClientCert: break;
      case ClientAuth::kRequireAnyClientCert: auth = "RequireAnyClientCert"; break;
      case ClientAuth::kVerifyClientCertIfGiven: auth = "VerifyClientCertIfGiven"; break;
      case ClientAuth::kRequireAndVerifyClientCert: auth = "RequireAndVerifyClientCert"; break;
    }
    out << YAML::Key << "tls_server_config" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "cert_file" << YAML::Value << t.cert_file;
    out << YAML::Key << "key_file" << YAML::Value << kRedacted;
    out << YAML::Key << "client_auth_type" << YAML::Value << auth;
    if (!t.client_ca_file.empty()) out << YAML::Key << "client_ca_file" << YAML::Value << t.client_ca_file;
    out << YAML::Key << "min_version" << YAML::Value << t.min_version;
    if (!t.max_version.empty()) out << YAML::Key << "max_version" << YAML::Value << t.max_version;
    out << YAML::EndMap;
  }
  if (!config.basic_auth_users.empty()) {
    out << YAML::Key << "basic_auth_users" << YAML::Value << YAML::BeginMap;
    for (const auto& [user, hash] : config.basic_auth_users) out << YAML::Key << user << YAML::Value << kRedacted;
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace rdmahd
