// WebConfig: the --web.config.file of the Prometheus exporter-toolkit (the file node_exporter
// takes), for TLS and HTTP basic authentication. Same YAML keys as exporter-toolkit:
//
//   tls_server_config:
//     cert_file: server.crt          # relative paths resolve against this file's folder
//     key_file: server.key
//     client_auth_type: RequireAndVerifyClientCert   # default NoClientCert
//     client_ca_file: ca.crt
//     min_version: TLS12             # TLS10 | TLS11 | TLS12 (default) | TLS13
//     max_version: TLS13
//   basic_auth_users:
//     alice: $2y$10$...              # bcrypt hash (htpasswd -nBC 10 alice); cost at most 14
//                                    # (kMaxBcryptCost), or the file is refused naming the user
//
// Every other key is an error naming file and line, so a typo never silently serves in clear.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "common/result.h"

namespace rdmahd {

enum class ClientAuth {
  kNoClientCert,
  kRequireAnyClientCert,        // a certificate must be sent; it is not verified
  kVerifyClientCertIfGiven,     // none is fine; one sent must verify against client_ca_file
  kRequireAndVerifyClientCert,  // one must be sent and verify against client_ca_file
};

struct TlsServerConfig {
  std::string cert_file, key_file, client_ca_file;  // resolved paths
  std::string cert_pem, key_pem, client_ca_pem;     // their contents, read at load time
  ClientAuth client_auth = ClientAuth::kNoClientCert;
  std::string min_version = "TLS12";
  std::string max_version;  // empty = the newest the library has
};

struct WebConfig {
  std::string source;                           // the file, for messages
  std::optional<TlsServerConfig> tls;           // unset = plain HTTP
  std::map<std::string, std::string> basic_auth_users;  // user -> bcrypt hash; empty = no auth
};

// Parses `yaml_text`; `source` names it in errors; relative paths resolve against `base_dir`, and
// the certificate files are read (so an unreadable key is an error now, not at the first client).
Result<WebConfig> ParseWebConfig(const std::string& yaml_text, const std::string& source,
                                 const std::string& base_dir);
Result<WebConfig> LoadWebConfigFile(const std::string& path);

// The settings of a loaded web config as YAML in the file's own keys, for a support bundle: an
// allow-list, written from what was loaded and never from the file, so nothing else in it rides
// along. Certificate and CA files are named by path (never their contents); key_file's path and
// every user's hash read "<redacted>".
std::string WebConfigSettingsYaml(const WebConfig& config);

}  // namespace rdmahd
