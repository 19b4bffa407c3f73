// Command line: `rdma-healthd [flags]` runs the daemon; `rdma-healthd check` runs every collector and
// check once and prints verdicts; `rdma-healthd check-config FILE` validates a config file.
// Flags follow Prometheus exporter conventions (--web.listen-address, --path.sysfs, ...).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "config/config.h"

namespace rdmahd {

inline constexpr const char* kDefaultListenAddress = ":9872";

enum class Mode { kDaemon, kCheck, kCheckConfig, kExit };

struct Options {
  Mode mode = Mode::kDaemon;
  int exit_code = 0;           // with Mode::kExit (--help, --version, usage errors)
  std::string exit_message;    // printed before exiting (help text, version, usage error)

  std::string config_file;     // empty = built-in defaults
  std::string listen_address = kDefaultListenAddress;
  std::string web_config_file;  // exporter-toolkit web config (TLS, basic auth); empty = plain HTTP
  std::string sysfs = "/sys";
  std::string procfs = "/proc";
  std::string dcb_dir;         // empty = DCB netlink
  std::string dev;             // empty = NodeFs::DefaultDevRoot(sysfs)
  std::string log_level = "info";
  std::string log_format = "auto";
  std::map<std::string, bool> collector_flags;  // --collector.X / --no-collector.X

  std::string output = "table";  // check: table | json
  bool fail_on_warning = false;  // check: exit 1 on warnings too
};

// Parses argv. Never exits the process: help, version and usage errors come back as Mode::kExit
// (exit code 0 for help/version, 2 for usage errors, message filled).
Options ParseOptions(int argc, const char* const* argv, const std::vector<std::string>& collectors);

// Applies the --collector.X flags on top of a config loaded from file or defaults.
void ApplyCollectorFlags(const Options& options, Config& config);

}  // namespace rdmahd
