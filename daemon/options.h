// Command line: `rdma-healthd [flags]` runs the daemon; `rdma-healthd check` runs every collector and
// check once and prints verdicts; `rdma-healthd check-config FILE` validates a config file.
// Flags follow Prometheus exporter conventions (--web.listen-address, --path.sysfs, ...).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/node_fs.h"
#include "common/result.h"
#include "config/config.h"

namespace rdmahd {

inline constexpr const char* kDefaultListenAddress = ":9872";

enum class Mode { kDaemon, kCheck, kCheckConfig, kProbe, kCapture, kExit };

struct Options {
  Mode mode = Mode::kDaemon;
  int exit_code = 0;           // with Mode::kExit (--help, --version, usage errors)
  std::string exit_message;    // printed before exiting (help text, version, usage error)

  std::string config_file;     // empty = built-in defaults
  // Set by `check --capture` when config_file is the bundle's own: the extraction folder, under
  // which that config's paths are read (ConfigReadOptions::captured_root), never on this machine.
  std::string config_captured_root;
  std::string listen_address = kDefaultListenAddress;
  std::string web_config_file;  // exporter-toolkit web config (TLS, basic auth); empty = plain HTTP
  std::string sysfs = "/sys";
  std::string procfs = "/proc";
  std::string dcb_dir;         // empty = DCB netlink
  std::string dev;             // empty = NodeFs::DefaultDevRoot(sysfs)
  std::string kmsg;            // a saved kernel log; empty = /dev/kmsg on a live node
  std::string log_level = "info";
  std::string log_format = "auto";
  std::map<std::string, bool> collector_flags;  // --collector.X / --no-collector.X

  std::string output = "table";  // check: table | json | summary
  bool fail_on_warning = false;  // check: exit 1 on warnings too
  std::string check_capture;     // check: judge this `rdma-healthd capture` bundle (daemon/capture.h)

  // capture: the support bundle (daemon/capture.h).
  std::string capture_output;        // empty: DefaultCaptureName() in the current folder
  double capture_timeout_s = 120.0;  // reading the node stops here (the bundle is still written)
  // check: collect twice this far apart, so that rate checks can judge; 0 = one collection.
  std::chrono::milliseconds sample_interval{0};

  // probe: one interactive measurement against PEER's responder.
  std::string probe_peer;                 // IP or DNS name
  std::uint16_t probe_port = 18600;       // the responder's rdma_cm port (peers.responder.port)
  std::optional<std::uint32_t> probe_size;  // bytes; unset: 2 (latency), 65536 (bandwidth)
  std::uint32_t probe_iterations = 1000;  // latency ping-pongs
  bool probe_bandwidth = false;           // RDMA WRITE stream instead of the ping-pong
  double probe_duration_s = 1.0;          // bandwidth stream length
  std::uint32_t probe_queue_depth = 128;  // bandwidth: writes in flight
  std::string probe_source;               // local IP to leave from; empty: rdma_cm chooses
  std::optional<std::uint8_t> probe_tos;  // IP ToS (DSCP << 2)
  double probe_timeout_s = 1.0;           // every connect step
};

// Parses argv. Never exits the process: help, version and usage errors come back as Mode::kExit
// (exit code 0 for help/version, 2 for usage errors, message filled).
//
// A value never comes from the next argument when `=` was written, and no flag takes an empty
// value (an empty --path.dcb would silently read live netlink, an empty --web.config.file would
// switch TLS and authentication off): `--name=` is refused naming the flag and what to give, as are
// `--name ""` and `--name --other...` where --other is a flag of any subcommand. Arguments after a
// lone `--` are positional and never looked at.
Options ParseOptions(int argc, const char* const* argv, const std::vector<std::string>& collectors);

// One long flag ParseOptions accepts: `subcommand` is "" for the top level (whose flags every
// subcommand accepts too), else "check", "check-config", "probe" or "capture"; `name` is "--path.sysfs".
struct FlagInfo {
  std::string subcommand;
  std::string name;
  bool takes_value = false;  // false: a switch (--fail-on-warning, --collector.X, --help)
};
std::vector<FlagInfo> ListFlags(const std::vector<std::string>& collectors);

// Applies the --collector.X flags on top of a config loaded from file or defaults.
void ApplyCollectorFlags(const Options& options, Config& config);

// The node the --path.* flags describe.
NodeFs MakeNodeFs(const Options& options);

}  // namespace rdmahd
