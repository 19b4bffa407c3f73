// rdma-healthd entry point: parse flags, set up logging, then run the daemon, `check` or
// `check-config`, `probe` or `capture`.
#include <malloc.h>

#include <iostream>

#include "common/logging.h"
#include "core/collection_engine.h"
#include "common/excerpt.h"
#include "common/held_files.h"
#include "common/node_fs.h"
#include "daemon/capture.h"
#include "daemon/capture_check.h"
#include "daemon/check_command.h"
#include "daemon/daemon.h"
#include "daemon/options.h"
#include "daemon/probe_command.h"
#include "probes/rdma_cm_prober.h"

int main(int argc, char** argv) {
  using namespace rdmahd;
  // A scrape builds a few buffers of a few hundred KiB and frees them. With glibc's defaults each
  // HTTP worker thread gets its own arena and the mmap threshold climbs after the first free, so
  // those buffers stay resident once per thread. One arena and a fixed threshold give them back.
  mallopt(M_ARENA_MAX, 1);
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);

  Options options = ParseOptions(argc, argv, CollectorRegistry().Names());
  // `check` that cannot run says why on stdout too: node-problem-detector reads only stdout.
  const bool check = InvokesCheck(argc, argv);
  if (options.mode == Mode::kExit) {
    (options.exit_code == 0 ? std::cout : std::cerr) << options.exit_message;
    if (options.exit_code != 0 && check) std::cout << CheckCouldNotRunLine(options.exit_message) << "\n";
    return options.exit_code;
  }

  auto format = log::ParseFormat(options.log_format);
  auto level = log::ParseLevel(options.log_level);
  if (!format.ok() || !level.ok()) {
    const std::string& why = !format.ok() ? format.error().message : level.error().message;
    std::cerr << "rdma-healthd: " << why << "\n";
    if (check) std::cout << CheckCouldNotRunLine(why) << "\n";
    return kExitCouldNotRun;
  }
  log::Init(*format, *level);

  // Held attribute files need descriptors (thousands on a 16-device node): raise the soft limit
  // to the hard one and size the held-file budget from it, for `check` as for the daemon.
  RaiseOpenFileLimit();

  switch (options.mode) {
    case Mode::kCheckConfig: {
      auto config = LoadConfigFile(options.config_file, RegisteredPluginNames());
      if (!config.ok()) {
        std::cerr << "rdma-healthd: " << config.error().message << "\n";
        return kExitCouldNotRun;
      }
      if (config->no_settings) {
        // Valid (the daemon starts on the built-in defaults), but a reload refuses it: say so.
        std::cerr << "rdma-healthd: warning: " << CapMessage(options.config_file)
                  << ": the file has no settings (it is empty or only comments): the daemon would "
                     "start on the built-in defaults, and a reload (SIGHUP) to it keeps the running "
                     "configuration; write {} to run on the built-in defaults on purpose\n";
      }
      std::cout << options.config_file << ": OK\n";
      return kExitOk;
    }
    case Mode::kCheck: {
      // SIGINT/SIGTERM end `check` as by default (it can always be interrupted); with --capture the
      // extracted bundle is removed first (TempDir's handler).
      std::optional<TempDir> capture;  // check --capture: the extracted bundle, removed on return
      if (!options.check_capture.empty()) {
        auto opened = OpenCaptureForCheck(options);
        if (!opened.ok()) {
          std::cerr << "rdma-healthd: " << opened.error().message << "\n";
          std::cout << CheckCouldNotRunLine(opened.error().message) << "\n";
          return kExitCouldNotRun;
        }
        capture.emplace(std::move(*opened));
      }
      CollectionEngine engine(MakeNodeFs(options));
      const int code = RunCheckCommand(options, engine, std::cout, std::cerr);
      std::cout.flush();
      // Leaving through _Exit runs no destructor: the extracted bundle is removed first.
      LeaveIfACollectorIsStillRunning(engine.busy_collector(), code, &capture);
      return code;
    }
    case Mode::kCapture: {
      CollectionEngine engine(MakeNodeFs(options));
      const int code = RunCaptureCommand(options, engine, std::cout, std::cerr);
      std::cout.flush();
      LeaveIfACollectorIsStillRunning(engine.busy_collector(), code);
      return code;
    }
    case Mode::kProbe: {
      std::unique_ptr<PeerProber> prober = MakeRdmaCmProber();
      return RunProbeCommand(options, *prober, std::cout, std::cerr);
    }
    default:
      break;
  }

  // Only the daemon handles signals itself (signalfd in its main loop). Blocked before any thread
  // exists, so every thread inherits the mask and signals reach the signalfd.
  Daemon::BlockDaemonSignals();
  auto config = LoadEffectiveConfig(options);
  if (!config.ok()) {
    log::Error("cannot load the configuration", {{"error", config.error().message}});
    return kExitCouldNotRun;
  }
  if ((*config)->no_settings) {
    log::Warn("the configuration file has no settings (empty or only comments): running on the built-in "
              "defaults; a reload to a file with no settings keeps the running configuration",
              {{"config", (*config)->source}});
  }
  log::Info("starting rdma-healthd", {{"version", RDMAHD_VERSION},
                                      {"config", (*config)->source},
                                      {"sysfs", options.sysfs}});
  Daemon daemon(options, *config);
  const int code = daemon.Run();
  LeaveIfACollectorIsStillRunning(daemon.busy_collector(), code);
  return code;
}
