#include "daemon/options.h"

#include <CLI/CLI.hpp>

#include <cmath>
#include <sstream>

#include "common/parse.h"

namespace rdmahd {
namespace {

// "10s", "1500ms", "1m" or "0": whole milliseconds, 0 or from 1 s to 10 min; nullopt otherwise.
std::optional<std::chrono::milliseconds> ParseSampleInterval(std::string_view text) {
  if (text == "0") return std::chrono::milliseconds(0);
  std::optional<double> value;
  if (text.ends_with("ms")) {
    value = ParseDouble(text.substr(0, text.size() - 2));
  } else if (text.ends_with("s")) {
    value = ParseDouble(text.substr(0, text.size() - 1));
    if (value) *value *= 1000;
  } else if (text.ends_with("m")) {
    value = ParseDouble(text.substr(0, text.size() - 1));
    if (value) *value *= 60'000;
  }
  if (!value || !std::isfinite(*value) || *value < 1000 || *value > 600'000) return std::nullopt;
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(*value)));
}

// The command line: the CLI11 app bound to an Options, and what each value flag takes (for the
// message that refuses an empty value).
class CommandLine {
 public:
  CommandLine(Options& o, const std::vector<std::string>& collectors);

  CLI::App app{"rdma-healthd: RDMA/RoCE node health daemon and checker", "rdma-healthd"};
  CLI::App* check = nullptr;
  CLI::App* check_config = nullptr;
  CLI::App* probe = nullptr;
  CLI::App* capture = nullptr;
  CLI::Option* tos_option = nullptr;
  std::string check_config_file;
  unsigned tos = 0;

  // Every long flag of the app and its subcommands.
  std::vector<FlagInfo> Flags() const;
  // Why argv cannot be parsed as written, or nothing: see ParseOptions' contract.
  std::optional<std::string> FindMissingValue(int argc, const char* const* argv) const;

 private:
  // A flag that takes a value; `what` completes "give ...": "a folder", "table or json".
  template <typename T>
  CLI::Option* AddValue(CLI::App& to, const std::string& name, T& value, const std::string& help,
                        std::string what) {
    // A name two subcommands use (--output, --timeout): the hint names what either takes.
    std::string& hint = value_hints_[name];
    hint = hint.empty() || hint == what ? std::move(what) : hint + ", or " + what;
    return to.add_option(name, value, help);
  }
  void AddCommonFlags(Options& o, const std::vector<std::string>& collectors);
  std::string Hint(const std::string& name) const;

  std::map<std::string, std::string> value_hints_;
};

void CommandLine::AddCommonFlags(Options& o, const std::vector<std::string>& collectors) {
  AddValue(app, "--config.file", o.config_file, "YAML configuration file (built-in defaults when not given)",
           "a YAML file");
  AddValue(app, "--path.sysfs", o.sysfs, "sysfs mount point", "a folder")->capture_default_str();
  AddValue(app, "--path.procfs", o.procfs, "procfs mount point", "a folder")->capture_default_str();
  AddValue(app, "--path.dcb", o.dcb_dir,
           "read DCB state from captured `dcb -j` JSON files in this folder instead of netlink", "a folder");
  AddValue(app, "--path.dev", o.dev,
           "device node folder (/dev/infiniband/uverbsN, rdma_cm); default /dev with --path.sysfs=/sys, "
           "TREE/dev for --path.sysfs=TREE/sys, else SYSFS/dev",
           "a folder");
  AddValue(app, "--path.kmsg", o.kmsg,
           "read the kernel log from this saved file (dmesg, dmesg -r, journalctl -k -o short-monotonic, a copy "
           "of /dev/kmsg) instead of /dev/kmsg",
           "a file");
  AddValue(app, "--log.level", o.log_level, "debug, info, warn or error", "debug, info, warn or error")
      ->capture_default_str();
  AddValue(app, "--log.format", o.log_format, "text, json, journal, or auto (journal under systemd, else text)",
           "text, json, journal or auto")
      ->capture_default_str();
  // Tri-state: a collector named by neither flag keeps what the config file says.
  for (const auto& name : collectors) {
    app.add_flag_callback("--collector." + name, [&o, name] { o.collector_flags[name] = true; },
                          "enable the " + name + " collector (overrides the config file)");
    app.add_flag_callback("--no-collector." + name, [&o, name] { o.collector_flags[name] = false; },
                          "disable the " + name + " collector (overrides the config file)");
  }
}

CommandLine::CommandLine(Options& o, const std::vector<std::string>& collectors) {
  app.set_version_flag("--version", std::string("rdma-healthd ") + RDMAHD_VERSION);
  app.require_subcommand(0, 1);
  AddCommonFlags(o, collectors);
  AddValue(app, "--web.listen-address", o.listen_address,
           "address to serve /metrics on: :PORT (all IPv4 and IPv6 addresses), IPv4:PORT, "
           "[IPv6]:PORT or localhost:PORT",
           "an address such as :9872 or 127.0.0.1:9872")
      ->capture_default_str();
  AddValue(app, "--web.config.file", o.web_config_file,
           "exporter-toolkit web config (YAML) for TLS and basic authentication", "a YAML file");

  check = app.add_subcommand(
      "check", "run every collector and check once, print verdicts; exit 0 ok, 1 failed, 2 could not run");
  AddValue(*check, "--output", o.output, "table, json or summary (one line, for node-problem-detector)",
           "table, json or summary")
      ->check(CLI::IsMember({"table", "json", "summary"}))
      ->capture_default_str();
  check->add_flag("--fail-on-warning", o.fail_on_warning, "exit 1 on warnings too");
  AddValue(*check, "--capture", o.check_capture,
           "judge a bundle written by `rdma-healthd capture` (extracted to a private temporary folder; sets "
           "the --path.* flags, and --config.file to the bundle's config unless given)",
           "a .tar.gz file written by rdma-healthd capture");
  value_hints_["--sample-interval"] = "a duration such as 10s, 1500ms or 1m";
  check
      ->add_option_function<std::string>(
          "--sample-interval",
          [&o](const std::string& text) {
            const std::optional<std::chrono::milliseconds> d = ParseSampleInterval(text);
            if (!d) {
              throw CLI::ValidationError("--sample-interval",
                                         "must be 0 or a duration from 1s to 10m (10s, 1500ms, 1m)");
            }
            o.sample_interval = *d;
          },
          "collect twice this far apart, so that the error-rate checks can judge rates (0: once)")
      ->default_str("0");
  check->fallthrough();

  check_config = app.add_subcommand("check-config", "validate a configuration file and exit");
  check_config->add_option("file", check_config_file, "the file")->required();
  check_config->fallthrough();
  AddValue(app, "--check-config", check_config_file, "validate a configuration file and exit", "a YAML file");

  probe = app.add_subcommand(
      "probe", "measure latency (or bandwidth) to PEER's probe responder once and print perftest-style "
               "lines; exit 0 measured, 1 the probe failed, 2 could not run");
  probe->add_option("peer", o.probe_peer, "the peer: IP address or DNS name")->required();
  AddValue(*probe, "--port", o.probe_port, "the responder's rdma_cm port", "a port number")
      ->capture_default_str();
  AddValue(*probe, "--size", o.probe_size, "message size in bytes (default 2, or 65536 with --bandwidth)",
           "a number of bytes")
      ->check(CLI::Range(1u, 1u << 30));
  AddValue(*probe, "--iterations", o.probe_iterations, "latency ping-pongs", "a number from 5 to 1000000")
      ->check(CLI::Range(5u, 1'000'000u))
      ->capture_default_str();
  probe->add_flag("--bandwidth", o.probe_bandwidth, "an RDMA WRITE stream instead of the latency ping-pong");
  AddValue(*probe, "--duration", o.probe_duration_s, "bandwidth: seconds of writes", "a number of seconds")
      ->check(CLI::Range(0.01, 60.0))
      ->capture_default_str();
  AddValue(*probe, "--queue-depth", o.probe_queue_depth, "bandwidth: writes in flight",
           "a number from 1 to 4096")
      ->check(CLI::Range(1u, 4096u))
      ->capture_default_str();
  AddValue(*probe, "--source", o.probe_source, "local IP address to leave from (its netdev's RoCE v2 GID)",
           "a local IP address");
  tos_option = AddValue(*probe, "--tos", tos, "IP ToS of the probe traffic (DSCP << 2), 0-255",
                        "a number from 0 to 255")
                   ->check(CLI::Range(0u, 255u));
  AddValue(*probe, "--timeout", o.probe_timeout_s, "seconds for each connect step", "a number of seconds")
      ->check(CLI::Range(0.01, 60.0))
      ->capture_default_str();
  probe->fallthrough();

  capture = app.add_subcommand(
      "capture", "write a support bundle (.tar.gz) of what the daemon reads and judges on this node, for "
                 "`rdma-healthd check --capture` elsewhere; exit 0 written, 2 could not write");
  AddValue(*capture, "--output", o.capture_output,
           "the bundle to write (must not exist); default rdma-healthd-capture-HOST-TIME.tar.gz here",
           "a file name such as node.tar.gz");
  AddValue(*capture, "--timeout", o.capture_timeout_s, "seconds to spend reading the node", "a number of seconds")
      ->check(CLI::Range(1.0, 3600.0))
      ->capture_default_str();
  capture->fallthrough();
}

std::vector<FlagInfo> CommandLine::Flags() const {
  std::vector<FlagInfo> flags;
  auto add = [&flags](const CLI::App& from, const std::string& subcommand) {
    for (const CLI::Option* option : from.get_options()) {
      for (const std::string& name : option->get_lnames()) {
        // CLI11 reads a flag (switch) as an option that expects no item.
        flags.push_back({subcommand, "--" + name, option->get_items_expected_max() > 0});
      }
    }
  };
  add(app, "");
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) add(*sub, sub->get_name());
  return flags;
}

std::string CommandLine::Hint(const std::string& name) const {
  auto it = value_hints_.find(name);
  return it == value_hints_.end() ? "a value" : it->second;
}

std::optional<std::string> CommandLine::FindMissingValue(int argc, const char* const* argv) const {
  // Flags by name, from every subcommand: a value never starts with the name of any of them.
  std::map<std::string, bool> takes_value;
  for (const FlagInfo& f : Flags()) takes_value[f.name] = takes_value[f.name] || f.takes_value;
  auto flag_named_by = [&takes_value](std::string_view arg) -> std::optional<std::string> {
    if (arg.substr(0, 2) != "--") return std::nullopt;
    std::string name(arg.substr(0, arg.find('=')));
    if (takes_value.count(name) == 0) return std::nullopt;
    return name;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") break;  // what follows is positional
    const std::optional<std::string> name = flag_named_by(arg);
    if (!name) continue;
    const bool value_flag = takes_value.at(*name);
    if (arg.size() == name->size() + 1) {  // "--name="
      if (!value_flag) return *name + "= is empty: write " + *name + " alone (it takes no value), or leave it out";
      return *name + "= is empty: give " + Hint(*name) + ", or leave the flag out";
    }
    if (!value_flag || arg.size() > name->size()) continue;  // a switch, or --name=VALUE
    // "--name VALUE": CLI11 takes the next argument whatever it is.
    if (i + 1 >= argc) continue;  // CLI11 says the value is missing
    const std::string_view next = argv[i + 1];
    if (next.empty()) return *name + " is given an empty value: give " + Hint(*name) + ", or leave the flag out";
    if (const std::optional<std::string> other = flag_named_by(next)) {
      return *name + " has no value (the argument after it is the flag " + *other + "): give " + Hint(*name) +
             ", or leave the flag out";
    }
    ++i;  // the value, whatever it looks like
  }
  return std::nullopt;
}

Options UsageError(const std::string& message) {
  Options o;
  o.mode = Mode::kExit;
  o.exit_code = 2;
  o.exit_message = "rdma-healthd: " + message + "\nRun with --help for more information.\n";
  return o;
}

}  // namespace

Options ParseOptions(int argc, const char* const* argv, const std::vector<std::string>& collectors) {
  Options o;
  CommandLine cli(o, collectors);
  if (std::optional<std::string> problem = cli.FindMissingValue(argc, argv)) return UsageError(*problem);

  try {
    cli.app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::ostringstream out, err;
    int code = cli.app.exit(e, out, err);
    o.mode = Mode::kExit;
    o.exit_code = code == 0 ? 0 : 2;
    o.exit_message = out.str() + err.str();
    return o;
  }

  if (cli.check->parsed()) {
    o.mode = Mode::kCheck;
  } else if (cli.capture->parsed()) {
    o.mode = Mode::kCapture;
  } else if (cli.probe->parsed()) {
    o.mode = Mode::kProbe;
    if (cli.tos_option->count() > 0) o.probe_tos = static_cast<std::uint8_t>(cli.tos);
  } else if (cli.check_config->parsed() || !cli.check_config_file.empty()) {
    o.mode = Mode::kCheckConfig;
    o.config_file = cli.check_config_file;
  }
  return o;
}

std::vector<FlagInfo> ListFlags(const std::vector<std::string>& collectors) {
  Options unused;
  return CommandLine(unused, collectors).Flags();
}

void ApplyCollectorFlags(const Options& options, Config& config) {
  for (const auto& [name, enabled] : options.collector_flags) config.collectors[name] = enabled;
}

NodeFs MakeNodeFs(const Options& options) {
  NodeFs fs(options.sysfs, options.procfs, options.dcb_dir, options.dev);
  fs.set_kernel_log(options.kmsg);
  return fs;
}

}  // namespace rdmahd
