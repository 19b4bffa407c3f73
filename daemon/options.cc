#include "daemon/options.h"

#include <CLI/CLI.hpp>

#include <sstream>

namespace rdmahd {
namespace {

void AddCommonFlags(CLI::App& app, Options& o, const std::vector<std::string>& collectors) {
  app.add_option("--config.file", o.config_file,
                 "YAML configuration file (built-in defaults when not given)");
  app.add_option("--path.sysfs", o.sysfs, "sysfs mount point")->capture_default_str();
  app.add_option("--path.procfs", o.procfs, "procfs mount point")->capture_default_str();
  app.add_option("--path.dcb", o.dcb_dir,
                 "read DCB state from captured `dcb -j` JSON files in this folder instead of netlink");
  app.add_option("--path.dev", o.dev,
                 "device node folder (/dev/infiniband/uverbsN, rdma_cm); default /dev with --path.sysfs=/sys, "
                 "TREE/dev for --path.sysfs=TREE/sys, else SYSFS/dev");
  app.add_option("--log.level", o.log_level, "debug, info, warn or error")->capture_default_str();
  app.add_option("--log.format", o.log_format,
                 "text, json, journal, or auto (journal under systemd, else text)")
      ->capture_default_str();
  // Tri-state: a collector named by neither flag keeps what the config file says.
  for (const auto& name : collectors) {
    app.add_flag_callback("--collector." + name, [&o, name] { o.collector_flags[name] = true; },
                          "enable the " + name + " collector (overrides the config file)");
    app.add_flag_callback("--no-collector." + name, [&o, name] { o.collector_flags[name] = false; },
                          "disable the " + name + " collector (overrides the config file)");
  }
}

}  // namespace

Options ParseOptions(int argc, const char* const* argv, const std::vector<std::string>& collectors) {
  Options o;
  CLI::App app{"rdma-healthd: RDMA/RoCE node health daemon and checker", "rdma-healthd"};
  app.set_version_flag("--version", std::string("rdma-healthd ") + RDMAHD_VERSION);
  app.require_subcommand(0, 1);
  AddCommonFlags(app, o, collectors);
  app.add_option("--web.listen-address", o.listen_address,
                 "address to serve /metrics on: :PORT (all IPv4 and IPv6 addresses), IPv4:PORT, "
                 "[IPv6]:PORT or localhost:PORT")
      ->capture_default_str();
  app.add_option("--web.config.file", o.web_config_file,
                 "exporter-toolkit web config (YAML) for TLS and basic authentication");

  CLI::App* check = app.add_subcommand(
      "check", "run every collector and check once, print verdicts; exit 0 ok, 1 failed, 2 could not run");
  check->add_option("--output", o.output, "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  check->add_flag("--fail-on-warning", o.fail_on_warning, "exit 1 on warnings too");
  check->fallthrough();

  std::string check_config_file;
  CLI::App* check_config = app.add_subcommand("check-config", "validate a configuration file and exit");
  check_config->add_option("file", check_config_file, "the file")->required();
  check_config->fallthrough();
  app.add_option("--check-config", check_config_file, "validate a configuration file and exit");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::ostringstream out, err;
    int code = app.exit(e, out, err);
    o.mode = Mode::kExit;
    o.exit_code = code == 0 ? 0 : 2;
    o.exit_message = out.str() + err.str();
    return o;
  }

  if (check->parsed()) {
    o.mode = Mode::kCheck;
  } else if (check_config->parsed() || !check_config_file.empty()) {
    o.mode = Mode::kCheckConfig;
    o.config_file = check_config_file;
  }
  return o;
}

void ApplyCollectorFlags(const Options& options, Config& config) {
  for (const auto& [name, enabled] : options.collector_flags) config.collectors[name] = enabled;
}

}  // namespace rdmahd
