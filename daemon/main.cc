// rdma-healthd entry point: parse flags, set up logging, then run the daemon, `check` or
// `check-config`.
#include <malloc.h>

#include <iostream>

#include "collectors/collector.h"
#include "common/node_fs.h"
#include "daemon/check_command.h"
#include "daemon/daemon.h"
#include "daemon/logging.h"
#include "daemon/options.h"

int main(int argc, char** argv) {
  using namespace rdmahd;
  // Before any thread exists, so every thread inherits the mask and signals reach the signalfd.
  Daemon::BlockDaemonSignals();
  // A scrape builds a few buffers of a few hundred KiB and frees them. With glibc's defaults each
  // HTTP worker thread gets its own arena and the mmap threshold climbs after the first free, so
  // those buffers stay resident once per thread. One arena and a fixed threshold give them back.
  mallopt(M_ARENA_MAX, 1);
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);

  Options options = ParseOptions(argc, argv, RegisteredCollectorNames());
  if (options.mode == Mode::kExit) {
    (options.exit_code == 0 ? std::cout : std::cerr) << options.exit_message;
    return options.exit_code;
  }

  auto format = log::ParseFormat(options.log_format);
  auto level = log::ParseLevel(options.log_level);
  if (!format.ok() || !level.ok()) {
    std::cerr << "rdma-healthd: " << (!format.ok() ? format.error().message : level.error().message) << "\n";
    return kExitCouldNotRun;
  }
  log::Init(*format, *level);

  // Held attribute files need descriptors (thousands on a 16-device node): raise the soft limit
  // to the hard one and size the held-file budget from it, for `check` as for the daemon.
  RaiseOpenFileLimit();

  switch (options.mode) {
    case Mode::kCheckConfig: {
      auto config = LoadConfigFile(options.config_file, RegisteredCollectorNames());
      if (!config.ok()) {
        std::cerr << "rdma-healthd: " << config.error().message << "\n";
        return kExitCouldNotRun;
      }
      std::cout << options.config_file << ": OK\n";
      return kExitOk;
    }
    case Mode::kCheck:
      return RunCheckCommand(options, std::cout, std::cerr);
    default:
      break;
  }

  auto config = LoadEffectiveConfig(options);
  if (!config.ok()) {
    log::Error("cannot load the configuration", {{"error", config.error().message}});
    return kExitCouldNotRun;
  }
  log::Info("starting rdma-healthd", {{"version", RDMAHD_VERSION},
                                      {"config", (*config)->source},
                                      {"sysfs", options.sysfs}});
  Daemon daemon(options, *config);
  return daemon.Run();
}
