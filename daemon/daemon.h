// Daemon: the long-running mode. Owns the config (swapped whole on SIGHUP), the collection engine,
// the HTTP endpoints and the main loop (signalfd + sd_notify watchdog + periodic evaluation).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "collectors/collection_engine.h"
#include "common/metric_sink.h"
#include "config/config.h"
#include "daemon/options.h"
#include "daemon/verdict_tracker.h"

namespace rdmahd {

// Loads the config the options ask for (file or built-in defaults) with the --collector flags
// applied on top.
Result<std::shared_ptr<const Config>> LoadEffectiveConfig(const Options& options);

// The running config and the outcome of the last reload. Thread-safe.
class ConfigStore {
 public:
  explicit ConfigStore(std::shared_ptr<const Config> initial);
  std::shared_ptr<const Config> Get() const;
  // Tries `loaded`: on success swaps it in; on error keeps the running config. Either way the
  // outcome is recorded for the reload metrics.
  bool Apply(Result<std::shared_ptr<const Config>> loaded, std::string* error_message);
  void Render(MetricSink& sink) const;
  // Changes whenever what Render prints changes (every Apply).
  std::uint64_t generation() const;

 private:
  mutable std::mutex mu_;
  std::uint64_t generation_ = 0;
  std::shared_ptr<const Config> current_;
  bool last_reload_ok_ = true;
  double last_success_unix_ = 0;
};

class Daemon {
 public:
  Daemon(Options options, std::shared_ptr<const Config> config);
  // Blocks until SIGTERM or SIGINT. The caller must have blocked SIGHUP/SIGTERM/SIGINT in every
  // thread (BlockDaemonSignals) before any thread was created. Returns the process exit code.
  int Run();

  // Blocks the signals the daemon handles, in the calling thread (call first thing in main).
  static void BlockDaemonSignals();

  // The /metrics body (exposed for tests). Scrapes served from the same collection share one
  // rendered text; the text stays valid for as long as the caller holds it.
  std::shared_ptr<const std::string> Metrics();

 private:
  std::string LandingPage() const;
  void Reload();
  void EvaluateInBackground();
  // Verdict changes and RDMA device appearance/disappearance go to the log.
  void Observe(const std::shared_ptr<const Report>& report);

  Options options_;
  ConfigStore config_;
  CollectionEngine engine_;
  VerdictTracker tracker_;
  std::mutex devices_mu_;
  std::optional<std::size_t> last_device_count_;  // guarded by devices_mu_
  std::atomic<bool> ready_{false};
  std::atomic<std::int64_t> last_loop_tick_ns_{0};
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();

  // The last /metrics text and what it was rendered from. The sink and, when no request still
  // holds it, the text's buffer are reused by the next render, so a steady-state scrape allocates
  // almost nothing.
  std::mutex exposition_mu_;
  std::shared_ptr<const Report> exposition_report_;        // guarded by exposition_mu_
  std::uint64_t exposition_config_generation_ = 0;         // guarded by exposition_mu_
  std::shared_ptr<std::string> exposition_;                // guarded by exposition_mu_
  MetricSink exposition_sink_;                             // guarded by exposition_mu_
};

}  // namespace rdmahd
